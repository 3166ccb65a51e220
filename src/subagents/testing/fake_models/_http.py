"""Re-exports the HTTP server of :mod:`subagents.fake_model_servers` for tests."""

from ...fake_model_servers._http import FakeHandler as FakeHandler
from ...fake_model_servers._http import FakeServer as FakeServer
from ...fake_model_servers._http import RecordedRequest as RecordedRequest
from ...fake_model_servers._http import serve as serve

__all__ = ("FakeHandler", "FakeServer", "RecordedRequest", "serve")
