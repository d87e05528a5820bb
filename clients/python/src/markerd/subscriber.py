"""Live changes of one layer: the change feed (``markerd --publish``) with catch-up by version.

    sub = Subscriber(client, "tcp://127.0.0.1:7451", "fleet", since=loaded_version)
    for change in sub:          # GetChangesResponse pages (catch-up), then ChangeEvents, in order
        apply(change)

Iterating subscribes first, then catches up with GetChanges from ``since``, then yields feed
events. When an event shows that events were missed (its ``previous_version`` is above the
version held: NNG drops events for a slow subscriber, and a broken connection comes back without
them), it catches up again from the version held. When the server no longer has the changes
after that version (its history is bounded and does not survive a restart), iterating raises
``MarkerdError`` with code FAILED_PRECONDITION: reload the layer and start a new Subscriber.
"""
import pynng

from markerd.client import MarkerdError
from markerd.v1 import markerd_pb2 as pb


class Subscriber:
    """Subscribes to ``layer_id``'s topic ("layer/<id>/") at ``feed_url``; ``version`` is the
    layer version held so far (every change up to it was yielded). ``close()`` ends iteration
    (within ``poll_ms``)."""

    def __init__(self, client, feed_url, layer_id, since, poll_ms=200):
        self.client = client
        self.layer_id = layer_id
        self.version = since
        self._topic = f"layer/{layer_id}/".encode()
        self._socket = pynng.Sub0(dial=feed_url, block_on_dial=False, recv_timeout=poll_ms, topics=[self._topic])
        self._closed = False

    def __iter__(self):
        yield from self._catch_up()
        while not self._closed:
            try:
                message = self._socket.recv()
            except pynng.Timeout:
                continue
            except pynng.Closed:
                return
            feed = pb.FeedEvent.FromString(message[len(self._topic):])
            if not feed.HasField("change"):
                continue
            event = feed.change
            if event.version <= self.version:
                continue  # already held (from a catch-up)
            if event.previous_version > self.version:
                yield from self._catch_up()  # missed events; the catch-up covers this one
                continue
            yield event
            self.version = event.version

    def _catch_up(self):
        """GetChanges pages from ``version`` until complete (raises MarkerdError: FAILED_PRECONDITION = reload)."""
        token = ""
        while True:
            page = self.client.get_changes(layer_id=self.layer_id, since_version=self.version, page_token=token)
            yield page
            token = page.next_page_token
            if not token:
                self.version = page.version
                return

    def close(self):
        self._closed = True
        self._socket.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


__all__ = ["Subscriber", "MarkerdError"]
