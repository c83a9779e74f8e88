"""The audit key file: created once with mode 0600, read back the same, refused when it is not
a key; the key itself never appears in the log."""

from __future__ import annotations

import logging
import stat
from pathlib import Path

import pytest

from gateway.audit.keys import AuditKey
from gateway.errors import ConfigError


def create(path: Path) -> AuditKey:
    key, secret = AuditKey.load_or_new(path)
    return key if secret is None else AuditKey.write_new(path, secret)


def test_created_once_private_and_read_back_the_same(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "state" / "audit.key"
    with caplog.at_level(logging.INFO, logger="callgate.audit"):
        first, secret_bytes = AuditKey.load_or_new(path)
        assert secret_bytes is not None and not path.exists()  # nothing written yet
        assert AuditKey.write_new(path, secret_bytes).key_id == first.key_id
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    again = create(path)
    assert (first.key_id, first.mask("x"), first.seal("h")) == (
        again.key_id,
        again.mask("x"),
        again.seal("h"),
    )
    secret = path.read_text().strip()
    assert len(bytes.fromhex(secret)) == 32
    assert first.key_id in caplog.text and secret not in caplog.text
    assert secret not in repr(first)
    assert create(tmp_path / "b.key").mask("x") != first.mask("x")


def test_a_key_written_first_by_another_process_is_the_one_kept(tmp_path: Path) -> None:
    path = tmp_path / "audit.key"
    mine, my_secret = AuditKey.load_or_new(path)
    theirs = create(path)
    assert my_secret is not None
    assert AuditKey.write_new(path, my_secret).key_id == theirs.key_id != mine.key_id


@pytest.mark.parametrize(
    "content,problem",
    [
        ("", "expected at least 32 bytes"),
        ("not hex at all", "expected at least 32 bytes"),
        ("ab" * 8, "expected at least 32 bytes"),
    ],
)
def test_a_file_that_is_not_a_key_is_refused(tmp_path: Path, content: str, problem: str) -> None:
    path = tmp_path / "audit.key"
    path.write_text(content)
    with pytest.raises(ConfigError, match=f"--audit-key-file {path}: {problem}"):
        create(path)


def test_a_missing_key_is_refused_where_it_must_exist(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no such file"):
        AuditKey.load(tmp_path / "nope.key")


def test_a_key_readable_by_others_is_used_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "audit.key"
    path.write_text("ab" * 32)
    path.chmod(0o644)
    with caplog.at_level(logging.WARNING, logger="callgate.audit"):
        AuditKey.load(path)
    assert "can be read by other users" in caplog.text


def test_keyed_digests_are_keyed_once() -> None:
    key = AuditKey(b"k" * 32)
    digest = "a" * 64
    keyed = key.keyed(digest)
    assert keyed.startswith(f"hmac-sha256:{key.key_id}:") and digest not in keyed
    assert key.keyed(keyed) == keyed and key.keyed("") == ""
