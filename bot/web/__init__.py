"""The bot's own web server: the release board (``board`` the data, ``board_html`` the page,
``board_routes`` its routes), ``/healthz`` and ``/metrics`` (``health``), the probe ``relbot
health`` runs (``healthcheck``) and the guard every request passes (``guard``). It sits
above the service layer (the board reads what the gate observed) and may import everything
below it, never the composition or an adapter."""
