"""markerd client: ``markerd.Client`` and the protobuf messages (``markerd.pb``, generated from
markerd's Protos/markerd/v1 when the package is built)."""
from markerd.client import MUTATIONS, Client, MarkerdError, method_name
from markerd.subscriber import Subscriber
from markerd.v1 import markerd_pb2 as pb

__all__ = ["Client", "MarkerdError", "MUTATIONS", "method_name", "pb", "Subscriber"]
