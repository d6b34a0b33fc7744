"""The client's address, through the proxies the service trusts.

Behind nginx every request comes from nginx's address: the login throttle
and the log's refusal budget, counted per address, would put every client in
one bucket. ``A2A_TRUSTED_PROXIES`` names the proxies in front (the shipped
deploy/ sets nginx's 127.0.0.1): a request from one of them is from the last
address of ``X-Forwarded-For`` that is not itself a trusted proxy. From any
other peer the header is ignored: a client cannot choose its own address.
"""

from typing import AbstractSet, Any, Mapping


def client_address(trusted: AbstractSet[str], environ: Mapping[str, Any]) -> str:
    """The address of the client of the WSGI request ``environ``."""
    peer = environ.get("REMOTE_ADDR") or "-"
    if peer not in trusted:
        return peer
    forwarded = environ.get("HTTP_X_FORWARDED_FOR", "")
    for hop in reversed(forwarded.split(",")):
        hop = hop.strip()
        if hop and hop not in trusted:
            return hop[:64]  # whatever it is, a bounded key
    return peer
