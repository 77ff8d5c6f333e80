"""Alerts: policies (``policies``), detection (``detect``, ``sweep``), delivery off the fire
path (``worker``, ``channels``). See ``docs/alerts.md``.

Nothing is imported here: the runner imports ``detect`` alone (its cold start must not pay
for the API's models or the channels).
"""
