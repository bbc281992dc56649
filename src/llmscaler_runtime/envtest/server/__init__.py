"""The HTTP face of the embedded API server: REST paths, discovery, OpenAPI, watch streaming.

Standard-library ``ThreadingHTTPServer`` with one thread per connection (a watch holds its
thread), HTTP/1.1 keep-alive and chunked line-delimited JSON for watches, as kube-apiserver.

The parts:

- ``apiserver``: :class:`ApiServer`, the socket and its thread;
- ``handler``: HTTP in and out, fault injection, the request recorder, verb dispatch;
- ``routing`` and ``discovery``: what a path names, and the documents of discovery paths;
- ``request``: one request's decoded body and options, and the verbs' :class:`Reply`;
- ``verbs``, ``patching``, ``deletion``, ``watch``: list/get/create/update, PATCH, DELETE and
  the watch stream;
- ``tables``: ``kubectl get`` Table rendering.
"""

from ..errors import qualified_resource
from .apiserver import ApiServer

__all__ = ["ApiServer", "qualified_resource"]
