"""Password hashes of the built-in users, made and checked with hashlib.

Not with ``werkzeug.security``: its default format changed under us
(Werkzeug 3.0 writes ``scrypt:...``, which Werkzeug 1.0 and 2.x before 2.3
cannot read), so the same database would log users in on one stack and not
on another. Hashes are written as ``pbkdf2:sha256:600000$salt$hex``, the
format every Werkzeug release reads (Werkzeug 2.3's own pbkdf2 default), and
both formats Werkzeug ever wrote by default are read: ``pbkdf2:<hash>:<n>``
(every release) and ``scrypt:<n>:<r>:<p>`` (Werkzeug 3.0 and later), so
the hashes of existing databases keep working.
"""

import hashlib
import hmac
import secrets
import string

METHOD = "pbkdf2:sha256:600000"
_SALT_CHARS = string.ascii_letters + string.digits  # as Werkzeug's salts
_SALT_LENGTH = 16


def hash_password(password: str) -> str:
    """The stored form of ``password``: ``METHOD$salt$hex``."""
    salt = "".join(secrets.choice(_SALT_CHARS) for _ in range(_SALT_LENGTH))
    return "%s$%s$%s" % (METHOD, salt, _derive(METHOD, salt, password))


def check_password(stored: str, password: str) -> bool:
    """True when ``password`` is the one ``stored`` was made from. A hash of
    a format not listed above (or damaged) checks as False, never raises."""
    try:
        method, salt, expected = stored.split("$", 2)
        actual = _derive(method, salt, password)
    except ValueError:
        return False
    return hmac.compare_digest(actual, expected)


def _derive(method, salt, password):
    name, *args = method.split(":")
    salt_bytes, password_bytes = salt.encode("utf-8"), password.encode("utf-8")
    if name == "pbkdf2" and len(args) == 2:
        hash_name, iterations = args[0], int(args[1])
        return hashlib.pbkdf2_hmac(hash_name, password_bytes, salt_bytes,
                                   iterations).hex()
    if name == "scrypt" and len(args) == 3:
        n, r, p = (int(arg) for arg in args)
        # Werkzeug's own memory bound: 128 * n * r * p is too tight.
        return hashlib.scrypt(password_bytes, salt=salt_bytes, n=n, r=r, p=p,
                              maxmem=132 * n * r * p).hex()
    raise ValueError("unknown password hash method %r" % name)
