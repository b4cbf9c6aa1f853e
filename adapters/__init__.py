"""Chat platform adapters: turn platform events into gate calls and render gate messages."""
