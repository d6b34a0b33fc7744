"""Under gunicorn with the shipped gunicorn.conf.py, each ``a2a_flask``
record is one line of gunicorn's error log: routed there, and not also on
stderr by a handler of ours nor by logging's last resort."""

import requests

TYPO = "Unknown setting A2A_AUTHENTICATON in app.config is ignored"
AUTH_OFF = "A2A_AUTH=off: every caller is one anonymous caller"
ACCESS = "a2a_flask.access: call agent=echo method=message/send"


def test_each_record_is_one_line_of_the_error_log(start_server):
    server = start_server(app="wsgi:app", workers=1, auth="off",
                          env={"A2A_AUTHENTICATON": "off"})
    answer = requests.post(server.url + "/api/v1/agents/echo/a2a", timeout=10, json={
        "jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {
            "message": {"role": "user", "messageId": "m-1",
                        "parts": [{"kind": "text", "text": "hi"}]}}})
    assert answer.json()["result"]["status"]["state"] == "completed"
    assert server.wait_log(ACCESS)
    server.stop()
    lines = server.log().splitlines()
    for needle in (TYPO, AUTH_OFF, ACCESS):
        found = [line for line in lines if needle in line]
        assert len(found) == 1, (needle, lines)
        # gunicorn's error-log format (time, pid, level): the routed handler's.
        assert found[0].startswith("[") and "] [" in found[0], found
