"""Staging and public must be two separate folders: how a server path is read, and the
sentence that refuses folders that overlap."""

from __future__ import annotations

from pathlib import PurePosixPath

from bot.domain.folders import folders_overlap, overlap_message, server_path


def test_a_server_path_is_read_with_one_leading_slash_and_its_dots_folded() -> None:
    assert server_path("//srv/x/") == "/srv/x"
    assert server_path("///srv//x/./y/..") == "/srv/x"
    assert server_path("/srv/x") == "/srv/x"


def test_a_relative_server_path_stays_relative() -> None:
    assert server_path("srv/./x") == "srv/x"


def test_overlapping_folders_are_refused_with_both_paths_and_what_would_go_wrong() -> None:
    text = overlap_message("/srv/files", "/srv/files/public")
    assert text.startswith("storage.staging and storage.public overlap")
    assert "(/srv/files and /srv/files/public: the same folder, one inside the other" in text
    assert "or one through a symbolic link)" in text
    assert "publishing would move files onto themselves and lose them" in text
    assert text.endswith("so give them two separate folders.")


def test_one_folder_or_one_inside_the_other_overlaps_either_way_round() -> None:
    srv = PurePosixPath("/srv/files")
    assert folders_overlap(srv, srv)
    assert folders_overlap(srv / "staging", srv)
    assert folders_overlap(srv, srv / "public")
    assert not folders_overlap(srv / "staging", srv / "public")
    assert not folders_overlap(PurePosixPath("/srv/files-staging"), srv)


def test_folders_are_compared_as_the_server_reads_them() -> None:
    assert folders_overlap(PurePosixPath("//srv/files"), PurePosixPath("/srv/files/public"))
    assert folders_overlap(PurePosixPath("/srv/files/public"), PurePosixPath("//srv/files"))
    assert not folders_overlap(PurePosixPath("//srv/staging"), PurePosixPath("/srv/public"))
