"""The Discord platform (discord.py 2.x)."""
