"""Voice out: the delegate's replies as speech, synthesised locally sentence by sentence.

`base.Synthesizer` is what the rest of the code sees; `piper.PiperSynthesizer` is the shipped engine
(piper-tts, GPL-3.0, in the `voice` extra); `stream.speak` turns a reply into per-sentence PCM off the
event loop; `cut.said_until` says which words had been heard when playback was cut.
"""
