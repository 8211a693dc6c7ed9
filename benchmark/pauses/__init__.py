"""`python -m benchmark.pauses`: does a pause in the middle of a thought end the turn, and how long does
the end of a turn wait?

Every turn of the real recorded speech (benchmark/real_speech/) and of the espeak-ng fixtures
(audio_fixtures/) is streamed alone, with a silence inserted in its middle: after its middle word (word
times from Whisper's alignment; the silence is the clip's own quietest stretch, its room tone, repeated)
for each pause length, then its own end and 2 s of room tone. Each is streamed in 100 ms chunks through
the live recogniser, once with the silence rule alone and once with the end-of-turn model (smart-turn):

- false end of turn: the turn was cut inside the inserted pause (a delegate would answer someone who
  had not finished);
- turn-end wait: audio streamed past the turn's real end before its final came out (the cut alone,
  whatever the CPU; the model's own time is printed apart);
- held: turn ends the model judged unfinished, which wait for the full `turn_wait_s`.
"""
