"""A reply as a stream of spoken sentences, synthesised on one worker thread ahead of the caller."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from delegate.voice.base import SpokenSentence, Synthesizer, split_sentences

# One synthesis at a time for the whole process, as for speech recognition: two at once on two cores
# are each slower, and every meeting's first sentence should wait behind at most one other sentence.
_EXECUTOR = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tts")


def load_synthesizer(voice: Path | None = None) -> Synthesizer:
    """The shipped engine with `voice` (None: its default voice). Needs the `voice` extra."""
    from delegate.voice.piper import load_piper

    return load_piper(voice)


async def aload_synthesizer(voice: Path | None = None) -> Synthesizer:
    """`load_synthesizer` off the event loop (the first load reads a ~60 MB model)."""
    return await asyncio.to_thread(load_synthesizer, voice)


async def speak(synthesizer: Synthesizer, text: str) -> AsyncIterator[SpokenSentence]:
    """The sentences of `text` as audio, in order; the next one is synthesised while this one goes out.

    Closing the iterator early (barge-in) drops the sentence being synthesised ahead.
    """
    loop = asyncio.get_running_loop()
    sentences = split_sentences(text)

    def submit(i: int) -> asyncio.Future[bytes] | None:
        if i >= len(sentences):
            return None
        return loop.run_in_executor(_EXECUTOR, synthesizer.synthesize, sentences[i])

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


def synthesize_all(synthesizer: Synthesizer, text: str) -> list[SpokenSentence]:
    """Every sentence of `text`, synthesised here and now (offline tools: `listen --speak`, benchmarks)."""
    return [
        SpokenSentence(text=s, pcm=synthesizer.synthesize(s), sample_rate=synthesizer.sample_rate)
        for s in split_sentences(text)
    ]
