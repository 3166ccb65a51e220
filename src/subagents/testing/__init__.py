"""Public test helpers: the provider test kit every subagent provider runs.

See :mod:`subagents.testing.provider_kit`.
"""

from .provider_kit import CheckResult as CheckResult
from .provider_kit import ProviderCheck as ProviderCheck
from .provider_kit import ProviderCheckFailure as ProviderCheckFailure
from .provider_kit import ProviderCheckSkipped as ProviderCheckSkipped
from .provider_kit import ProviderFactory as ProviderFactory
from .provider_kit import ProviderReport as ProviderReport
from .provider_kit import ProviderScenarios as ProviderScenarios
from .provider_kit import check_provider as check_provider
from .provider_kit import provider_checks as provider_checks
from .provider_kit import unmanaged_factory as unmanaged_factory

__all__ = (
    "CheckResult",
    "ProviderCheck",
    "ProviderCheckFailure",
    "ProviderCheckSkipped",
    "ProviderFactory",
    "ProviderReport",
    "ProviderScenarios",
    "check_provider",
    "provider_checks",
    "unmanaged_factory",
)
