"""debug-mcp's pytest plugin (`PYTEST_PLUGINS=debug_mcp_pytest`, set by debug_mcp_trace when
`debug-script` asks for failures): reports each failing test's exception with its frames."""

import pytest

import debug_mcp_trace


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.failed and call.excinfo is not None:
        debug_mcp_trace.failure("test", call.excinfo.value, call.excinfo.tb, item.nodeid)
