"""A long job's polite stop (eqi_core/stopping.py): the first Ctrl-C checkpoints and stops at the next
step, the second stops at once; a stopped training resumes to the uninterrupted one's weights."""
import os
import signal
import time

import numpy as np
import pytest
import torch

from eqi_core.stopping import checkpoint_on_interrupt, should_stop


@pytest.fixture
def foreground():
    """SIGINT as a foreground process has it: a job started with ``&`` (as CI may start the suite) has it
    ignored, and so would every test here."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, before)


def test_a_deadline_alone_stops_once_it_has_passed():
    assert not should_stop(None) and not should_stop(time.time() + 60) and should_stop(0.0)


def test_the_first_ctrl_c_asks_to_stop_and_the_second_stops_at_once(foreground):
    said, before = [], signal.getsignal(signal.SIGINT)
    with checkpoint_on_interrupt(said.append):
        assert not should_stop()
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.05)  # the handler runs between bytecodes of the main thread
        assert should_stop() and said == [
            "stopping at the next checkpoint (Ctrl-C again to stop at once and lose the work since the last one)"]
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.05)
    assert not should_stop() and signal.getsignal(signal.SIGINT) is before  # all as it was


def test_a_job_started_in_the_background_is_left_as_it_is():
    """SIGINT ignored (``cmd &`` in a script): no Ctrl-C can reach the job, so nothing is installed."""
    before = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with checkpoint_on_interrupt(pytest.fail):
            assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.05)
            assert not should_stop()
    finally:
        signal.signal(signal.SIGINT, before)


def test_a_ctrl_c_during_suggester_training_checkpoints_and_the_run_resumes_bit_for_bit(tmp_path, foreground):
    from eqi_core.suggestion.model import SuggesterConfig, SuggesterTraining, SuggestionHead, train_loop
    from tests.unit.test_suggestion import _synthetic

    cfg = SuggesterTraining(steps=30, batch_size=8, lr=1e-2, warmup=5, hidden=8, validate_every=10)
    model_cfg = SuggesterConfig("prf", 8, "enc", hidden=8)
    torch.manual_seed(0)
    straight = SuggestionHead(model_cfg)
    (tmp_path / "a").mkdir()
    losses, picked = train_loop(straight, _synthetic(), cfg, tmp_path / "a")

    def ctrl_c_at_step_7(step, total):
        if step == 7:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.05)

    torch.manual_seed(0)
    stopped = SuggestionHead(model_cfg)
    (tmp_path / "b").mkdir()
    with checkpoint_on_interrupt(lambda line: None):
        done, _ = train_loop(stopped, _synthetic(), cfg, tmp_path / "b", progress=ctrl_c_at_step_7)
    assert len(done) == 7  # stopped after the step it was asked in, between validations, with a checkpoint
    resumed = SuggestionHead(model_cfg)
    losses_b, picked_b = train_loop(resumed, _synthetic(), cfg, tmp_path / "b")
    assert losses == losses_b and picked == picked_b
    for p, q in zip(straight.parameters(), resumed.parameters()):
        torch.testing.assert_close(p, q, rtol=0, atol=0)
    assert np.isfinite(losses).all()
