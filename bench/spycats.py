"""Sum a ``py-spy record --format raw`` profile of a worker into the stages
of a call (the profile table of bench/README.md):

    py-spy record -p WORKER_PID -d 8 -r 200 -f raw -o prof.txt --nonblocking
    python bench/spycats.py prof.txt

Each sample goes to the first stage (in the order below) whose function is
on its stack.
"""

import sys

STAGES = [  # (stage, function names as py-spy shows them)
    ("storage: start of the turn (task visible as working)", ("start_turn",)),
    ("storage: end of the turn (outcome, history)", ("finish_turn",)),
    ("storage: read the task", ("get_task",)),
    ("credentials (key lookup)", ("authenticate",)),
    ("body + JSON-RPC envelope", ("_read_body", "Envelope.parse")),
    ("params (marshmallow)", ("Method.load",)),
    ("JSON answer", ("result_response",)),
    ("agent turn (echo, outcome)", ("run_turn",)),
    ("rest of a2a_flask (dispatch, access record)", ("_logged_rpc", "logged_call")),
    ("Flask / werkzeug", ("Flask.wsgi_app",)),
    ("gunicorn: close (sync worker)", ("close_graceful",)),
    ("gunicorn: accept, parse, write", ("",)),
]


def stage_of(stack):
    names = {frame.split(" (")[0].rsplit(".", 1)[-1] for frame in stack.split(";")}
    for stage, functions in STAGES:
        if functions == ("",) or any(f.rsplit(".", 1)[-1] in names
                                     for f in functions):
            return stage
    return "other"


def main(path):
    totals, samples = {}, 0
    for line in open(path):
        stack, _, count = line.rstrip().rpartition(" ")
        if not stack:
            continue
        samples += int(count)
        stage = stage_of(stack)
        totals[stage] = totals.get(stage, 0) + int(count)
    print("%d samples" % samples)
    for stage, _ in STAGES:
        if stage in totals:
            print("%5.1f%%  %s" % (100.0 * totals[stage] / samples, stage))


if __name__ == "__main__":
    main(sys.argv[1])
