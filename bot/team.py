"""Who is who: people of the config, their roles, the branches they manage, their chat IDs."""

from __future__ import annotations

from collections.abc import Mapping

from bot.config.sections import PersonConfig


class Team:
    def __init__(self, people: Mapping[str, PersonConfig]) -> None:
        self._people = dict(people)

    @property
    def names(self) -> list[str]:
        return list(self._people)

    def identify(self, platform: str, user: str) -> str | None:
        """The person behind a platform user ID (on the console, the person's name)."""
        if platform == "console":
            return user if user in self._people else None
        for name, person in self._people.items():
            if getattr(person, platform, None) == user:
                return name
        return None

    def has_role(self, person: str, role: str) -> bool:
        return role in self._people[person].roles

    def roles_of(self, person: str) -> list[str]:
        return list(self._people[person].roles)

    def holders(self, role: str) -> list[str]:
        """The people who hold ``role``, in the config's order."""
        return [name for name, person in self._people.items() if role in person.roles]

    def is_rm(self, person: str, branch: str) -> bool:
        return branch in self._people[person].rm

    def rms_of(self, branch: str) -> list[str]:
        return [name for name, person in self._people.items() if branch in person.rm]
