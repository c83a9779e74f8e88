"""The travel example of the tool-calling guide: two read-only tools over HTTP on loopback.

`examples.travel.service` serves `POST /train_status` and `POST /weather`; the manifests in
`examples/travel/tools/` point callgate at it (`CALLGATE_TRAVEL_URL`, default
http://127.0.0.1:8765).
"""

from examples.travel.service import TravelService, start_travel_service

__all__ = ["TravelService", "start_travel_service"]
