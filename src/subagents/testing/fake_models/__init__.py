"""The fake model servers on 127.0.0.1, for tests: :mod:`subagents.fake_model_servers`,
re-exported here module by module (``subagents.testing.fake_models.anthropic_messages`` and
so on), with the pytest helpers that go with them."""
