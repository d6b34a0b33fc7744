"""Which b-trees a message/send writes to the SQLite WAL, per send.

Every commit writes each page it changed whole to the WAL (two system calls
a page: its frame header, then the page), and a checkpoint copies it again
into the database file: the pages a send changes are much of what it costs
the kernel. This calls US's WSGI app directly (as ``inproc.py`` does), sends
``--warm`` messages, copies the WAL into the file and starts it over, holds
the storage's checkpoints back, sends ``-n`` more, then reads the WAL's frame
headers and names each page's table or index (SQLite's ``dbstat``):

    python bench/walframes.py [-n 1000] [--warm 200] [--page-size 4096]

``--page-size`` rebuilds the new file with that page size (VACUUM) before
the first send. Run from the repository whose ``wsgi.py`` and ``a2a_flask``
to measure; the frame counts do not depend on the machine's speed.
"""

import argparse
import collections
import itertools
import os
import sqlite3
import struct
import sys
import tempfile

import inproc

WAL_HEADER, FRAME_HEADER = 32, 24


def frames(wal_path):
    """(page size, [page number of each frame]) of a WAL file."""
    with open(wal_path, "rb") as wal:
        data = wal.read()
    page_size = struct.unpack(">I", data[8:12])[0]
    pages, offset = [], WAL_HEADER
    while offset + FRAME_HEADER <= len(data):
        pages.append(struct.unpack(">I", data[offset:offset + 4])[0])
        offset += FRAME_HEADER + page_size
    return page_size, pages


def owners(path):
    """{page number: the table or index it belongs to}."""
    conn = sqlite3.connect("file:%s?mode=ro" % path, uri=True)
    try:
        return dict((page, name) for name, page in conn.execute(
            "SELECT name, pageno FROM dbstat"))
    finally:
        conn.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=1000, help="sends measured")
    parser.add_argument("--warm", type=int, default=200, help="sends before")
    parser.add_argument("--page-size", type=int, help="rebuild the file so first")
    args = parser.parse_args()
    sys.path.insert(0, os.getcwd())
    from a2a_flask.storage.sqlite import SqliteStorage
    SqliteStorage._checkpoint_due = lambda self: False  # ours held back
    SqliteStorage.AUTO_CHECKPOINT_PAGES = 10 ** 9  # and SQLite's
    with tempfile.TemporaryDirectory() as tmp:
        call = inproc.caller(*inproc.build("us", tmp))
        counter = itertools.count()

        def send():
            call(inproc.SEND % next(counter))

        path = os.environ["A2A_DATABASE"]
        if args.page_size:  # before the app opens the file
            conn = sqlite3.connect(path, isolation_level=None)
            conn.execute("PRAGMA journal_mode=DELETE")
            conn.execute("PRAGMA page_size=%d" % args.page_size)
            conn.execute("VACUUM")
            conn.execute("PRAGMA journal_mode=WAL")
            conn.close()
        for _ in range(args.warm):
            send()
        conn = sqlite3.connect(path, isolation_level=None)
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.close()
        for _ in range(args.n):
            send()
        page_size, pages = frames(path + "-wal")
        names = owners(path)
    print("page size %d: %d frames for %d sends, %.1f a send (%.1f KB)"
          % (page_size, len(pages), args.n, len(pages) / args.n,
             len(pages) * (page_size + FRAME_HEADER) / args.n / 1024))
    for name, count in collections.Counter(
            names.get(page, "(page %d)" % page) for page in pages).most_common():
        print("%6.2f  %s" % (count / args.n, name))


if __name__ == "__main__":
    main()
