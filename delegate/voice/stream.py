"""A reply as a stream of spoken sentences, synthesised on one worker thread ahead of the caller; and the
likely openings of a meeting's replies synthesised before they are needed, while no reply waits."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import AsyncIterator, Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from delegate.voice.base import SpokenSentence, Synthesizer, split_sentences
from delegate.voice.cache import DEFAULT_BUDGET_BYTES, CachingSynthesizer

# One synthesis at a time for the whole process, as for speech recognition: two at once on two cores
# are each slower, and every meeting's first sentence should wait behind at most one other sentence.
_EXECUTOR = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tts")
_replies_waiting = 0
"""Reply pieces submitted to the worker and not done: warming up waits while there are any."""


def load_synthesizer(voice: Path | None = None, cache_bytes: int = DEFAULT_BUDGET_BYTES) -> CachingSynthesizer:
    """The shipped engine with `voice` (None: its default voice), one per process, keeping what it said
    within `cache_bytes`. Needs the `voice` extra."""
    return _load(str(voice) if voice else None, cache_bytes)


@functools.lru_cache(maxsize=2)
def _load(voice: str | None, cache_bytes: int) -> CachingSynthesizer:
    from delegate.voice.piper import load_piper

    return CachingSynthesizer(load_piper(voice), cache_bytes)


async def aload_synthesizer(voice: Path | None = None, cache_bytes: int = DEFAULT_BUDGET_BYTES) -> Synthesizer:
    """`load_synthesizer` off the event loop (the first load reads a ~60 MB model)."""
    return await asyncio.to_thread(load_synthesizer, voice, cache_bytes)


async def speak(synthesizer: Synthesizer, text: str) -> AsyncIterator[SpokenSentence]:
    """The sentences of `text` as audio, in order; the next one is synthesised while this one goes out.

    Closing the iterator early (barge-in) drops the sentence being synthesised ahead.
    """
    loop = asyncio.get_running_loop()
    sentences = split_sentences(text)

    def submit(i: int) -> asyncio.Future[bytes] | None:
        global _replies_waiting
        if i >= len(sentences):
            return None
        pcm = synthesizer.cached(sentences[i]) if isinstance(synthesizer, CachingSynthesizer) else None
        if pcm is not None:
            done: asyncio.Future[bytes] = loop.create_future()
            done.set_result(pcm)
            return done
        _replies_waiting += 1
        future = loop.run_in_executor(_EXECUTOR, synthesizer.synthesize, sentences[i])
        future.add_done_callback(_reply_done)
        return future

    ahead = submit(0)
    try:
        for i, sentence in enumerate(sentences):
            assert ahead is not None
            pcm = await ahead
            ahead = submit(i + 1)
            yield SpokenSentence(text=sentence, pcm=pcm, sample_rate=synthesizer.sample_rate)
    finally:
        if ahead is not None:
            ahead.cancel()


def _reply_done(_: asyncio.Future[bytes]) -> None:
    global _replies_waiting
    _replies_waiting -= 1


async def warm(synthesizer: Synthesizer, texts: Iterable[str], limit: int) -> int:
    """Synthesise the first piece of each of `texts` ahead of need, at most `limit`, one at a time and only
    while no reply waits for the voice (a reply then waits behind one piece at most); returns how many."""
    if not isinstance(synthesizer, CachingSynthesizer) or not synthesizer.keeps:
        return 0
    loop = asyncio.get_running_loop()
    done = 0
    for text in texts:
        if done >= limit:
            break
        pieces = split_sentences(text)
        if not pieces or synthesizer.has(pieces[0]):
            continue
        while _replies_waiting:
            await asyncio.sleep(0.05)
        await loop.run_in_executor(_EXECUTOR, synthesizer.synthesize, pieces[0])
        done += 1
    return done


def synthesize_all(synthesizer: Synthesizer, text: str) -> list[SpokenSentence]:
    """Every sentence of `text`, synthesised here and now (offline tools: `listen --speak`, benchmarks)."""
    return [
        SpokenSentence(text=s, pcm=synthesizer.synthesize(s), sample_rate=synthesizer.sample_rate)
        for s in split_sentences(text)
    ]
