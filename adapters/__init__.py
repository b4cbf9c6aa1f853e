"""Chat platform adapters: turn platform events into gate calls and render gate messages.

The adapters sit above the service layer and its drivers (``platform``, the contract every
platform keeps; ``console``, the terminal's): they may import everything below them (the
gate, the scheduler, the ports, the domain, the basics), never the composition."""
