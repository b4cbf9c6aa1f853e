"""The SFTP batch of links is cut into commands the server accepts: as few as fit, none too
long (Linux caps one exec argument at 128 KiB); and files going to one folder under their own
names are linked by one process."""

from __future__ import annotations

from bot.domain.plan import PlanFile
from bot.storage.primitives import Move
from bot.storage.sftp_fs import _move_scripts
from bot.storage.ssh import MAX_COMMAND


def moves(count: int, name_length: int) -> list[Move]:
    found = []
    for i in range(count):
        name = f"{i:06d}".ljust(name_length, "x")
        f = PlanFile(name, f"3.14.1/{name}", "windows", 1, "0" * 64)
        found.append(
            Move(f, f"/srv/relbot-work/frozen/3.14.1/tree/{name}", f"/public/3.14.1/{name}")
        )
    return found


def test_a_batch_that_fits_is_one_command() -> None:
    assert len(_move_scripts(moves(100, 50))) == 1


def test_a_long_batch_is_cut_into_the_fewest_commands_none_too_long() -> None:
    batch = moves(400, 200)  # about 4 x 400 x 230 bytes of paths: well over a third of a command
    scripts = _move_scripts(batch)

    assert all(len(s.encode()) <= MAX_COMMAND for s in scripts)
    per_move = 2 * (len(batch[0].source) + len(batch[0].target)) + 20
    assert len(scripts) == -(-len(batch) // -(-(MAX_COMMAND // 3) // per_move))
    linked = sum(s.count("/relbot-work/frozen/") for s in scripts)
    assert linked == 2 * len(batch)  # each copy linked once and removed once, none lost


def move(source: str, target: str) -> Move:
    name = target.rsplit("/", 1)[1]
    return Move(PlanFile(name, target, "windows", 1, "0" * 64), source, target)


def test_files_going_to_one_folder_under_their_own_names_are_linked_by_one_ln() -> None:
    # One process per run of same-named files into one folder: the window in which the
    # release is partly public stays one process long; a renamed file is linked alone.
    batch = [
        move("/w/tree/a.exe", "/p/3.14.1/a.exe"),
        move("/w/tree/b.exe", "/p/3.14.1/b.exe"),
        move("/w/tree/c.json", "/p/3.14.1/windows-3.14.1.json"),
        move("/w/tree/d.exe", "/p/3.14.1/d.exe"),
        move("/w/tree/e.epub", "/p/doc/e.epub"),
    ]

    assert _move_scripts(batch) == [
        "set -e\n"
        "mkdir -p -- /p/3.14.1 /p/doc\n"
        "ln -- /w/tree/a.exe /w/tree/b.exe /p/3.14.1\n"
        "ln -T -- /w/tree/c.json /p/3.14.1/windows-3.14.1.json\n"
        "ln -- /w/tree/d.exe /p/3.14.1\n"
        "ln -- /w/tree/e.epub /p/doc\n"
        "rm -- /w/tree/a.exe /w/tree/b.exe /w/tree/c.json /w/tree/d.exe /w/tree/e.epub"
    ]
