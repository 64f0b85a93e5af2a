"""An upload over the configured limit (server.maxUploadSize = 200 MB) gets a clear message in the page."""
import pytest

pytestmark = pytest.mark.browser


def test_oversized_run_upload_is_refused(dashboard, page, tmp_path):
    big = tmp_path / "huge.trec"
    with open(big, "wb") as fh:  # 201 MB, sparse on disk
        fh.truncate(201 * 1024 * 1024)
    page.goto(f"{dashboard}/coverage?collection=wordnet&live=bm25", wait_until="domcontentloaded")
    page.get_by_text("Upload TREC run files", exact=False).first.wait_for(timeout=300_000)
    page.locator("input[type='file']").first.set_input_files(str(big))
    message = page.get_by_text("File must be 200", exact=False).first
    message.wait_for(timeout=60_000)
    assert "or smaller" in message.inner_text()
