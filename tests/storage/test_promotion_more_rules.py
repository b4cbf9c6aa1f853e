"""More rules of the promotion (bot/storage/promotion.py), seen in public and in the bot's work
area after a publish: a release's new folder becomes public by one rename even when it sits
below a public folder that exists already (``doc/``), and files linked into a shared folder
keep no second name in the bot's area. On the local backend, which links file by file."""

from __future__ import annotations

from pathlib import Path

from bot.ports import PromotionReport
from bot.storage.local import LocalStorage
from tests.storage.conftest import Backend, plan_for, publish

TAG = "3.14.0rc2"
DOCS = ["docs/index.html", "docs/library/os.html", "docs/_static/basic.css"]
FILES = ["Python-3.14.0rc2.tgz", "python-3.14.0rc2-amd64.exe"]


def local(tmp_path: Path) -> Backend:
    staging, public = tmp_path / "staging", tmp_path / "public"
    staging.mkdir()
    public.mkdir()
    return Backend("local", staging, public, lambda: LocalStorage(staging, public), None)  # type: ignore[arg-type]


def stage(backend: Backend, paths: list[str]) -> None:
    for path in paths:
        backend.write(TAG, path, f"content of {path}")


def test_a_new_docs_folder_under_the_public_doc_folder_becomes_public_by_one_rename(
    tmp_path: Path,
) -> None:
    backend = local(tmp_path)
    earlier = backend.public / "doc" / "3.13.9" / "index.html"  # doc/ is public already
    earlier.parent.mkdir(parents=True)
    earlier.write_text("3.13.9 docs")
    stage(backend, DOCS + FILES)
    plan = plan_for(backend, TAG, DOCS + FILES)
    storage = backend.make()
    assert storage.freeze(plan) == []
    frozen_docs = backend.copy_of(TAG, f"doc/{TAG}").stat().st_ino

    report = storage.promote(plan)

    # Every page of the release appeared at once: the bot's folder itself is now public.
    assert (backend.public / "doc" / TAG).stat().st_ino == frozen_docs
    assert report == PromotionReport(renamed=(f"doc/{TAG}", "3.14.0"), moved=0)
    assert backend.public_files() == {
        "doc/3.13.9/index.html": b"3.13.9 docs",
        **{f"doc/{TAG}/{p[5:]}": f"content of {p}".encode() for p in DOCS},
        **{f"3.14.0/{p}": f"content of {p}".encode() for p in FILES},
    }


def test_files_linked_into_a_shared_public_folder_keep_no_second_name_in_the_bots_area(
    tmp_path: Path,
) -> None:
    backend = local(tmp_path)
    rc1 = backend.public / "3.14.0" / "Python-3.14.0rc1.tgz"  # rc1's folder: rc2 shares it
    rc1.parent.mkdir()
    rc1.write_text("rc1")
    stage(backend, FILES)

    report = publish(backend.make(), plan_for(backend, TAG, FILES))

    assert report == PromotionReport(moved=len(FILES))
    for path in FILES:
        public = backend.public / "3.14.0" / path
        assert public.read_text() == f"content of {path}"
        # The public name is the file's only one: a file pulled from public later is gone,
        # not kept alive by the bot's copy until the release's tidy step.
        assert public.stat().st_nlink == 1
        assert not backend.copy_of(TAG, f"3.14.0/{path}").exists()
