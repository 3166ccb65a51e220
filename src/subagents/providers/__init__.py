"""The subagent seam: one run contract behind a named-provider registry.

See :mod:`subagents.providers.contract` for the rules every provider follows. Providers live in
their own modules: :mod:`subagents.providers.acp` (any ACP agent command),
:mod:`subagents.providers.codex` (``codex app-server``),
:mod:`subagents.providers.spread` (one name over several equivalent providers, least busy
first) and :mod:`subagents.providers.scripted` (deterministic, for tests).
"""

from .continuation import ContinuationManager as ContinuationManager
from .continuation import KnownChild as KnownChild
from .contract import START_TIME_FEATURES as START_TIME_FEATURES
from .contract import CancelSignal as CancelSignal
from .contract import ChildProgress as ChildProgress
from .contract import ContinuableProvider as ContinuableProvider
from .contract import Continuation as Continuation
from .contract import FailureKind as FailureKind
from .contract import OtherProgress as OtherProgress
from .contract import OutcomeStatus as OutcomeStatus
from .contract import PlanEntry as PlanEntry
from .contract import PlanProgress as PlanProgress
from .contract import ProgressEvent as ProgressEvent
from .contract import SubagentCapabilities as SubagentCapabilities
from .contract import SubagentEnded as SubagentEnded
from .contract import SubagentError as SubagentError
from .contract import SubagentErrorCode as SubagentErrorCode
from .contract import SubagentOutcome as SubagentOutcome
from .contract import SubagentProvider as SubagentProvider
from .contract import SubagentRequest as SubagentRequest
from .contract import SubagentRun as SubagentRun
from .contract import SubagentStarted as SubagentStarted
from .contract import TextProgress as TextProgress
from .contract import ThoughtProgress as ThoughtProgress
from .contract import ToolCallProgress as ToolCallProgress
from .contract import ToolResultProgress as ToolResultProgress
from .contract import UsageProgress as UsageProgress
from .permissions import PermissionAsker as PermissionAsker
from .permissions import RunAware as RunAware
from .service import LifecycleEvent as LifecycleEvent
from .service import LifecycleListener as LifecycleListener
from .service import SubagentService as SubagentService

__all__ = (
    "START_TIME_FEATURES",
    "CancelSignal",
    "ChildProgress",
    "ContinuableProvider",
    "Continuation",
    "ContinuationManager",
    "FailureKind",
    "KnownChild",
    "LifecycleEvent",
    "LifecycleListener",
    "OtherProgress",
    "OutcomeStatus",
    "PermissionAsker",
    "PlanEntry",
    "PlanProgress",
    "ProgressEvent",
    "RunAware",
    "SubagentCapabilities",
    "SubagentEnded",
    "SubagentError",
    "SubagentErrorCode",
    "SubagentOutcome",
    "SubagentProvider",
    "SubagentRequest",
    "SubagentRun",
    "SubagentService",
    "SubagentStarted",
    "TextProgress",
    "ThoughtProgress",
    "ToolCallProgress",
    "ToolResultProgress",
    "UsageProgress",
)
