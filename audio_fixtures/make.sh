#!/usr/bin/env bash
# Synthesize the audio fixtures: short meeting clips spoken by espeak-ng voices, mixed with a low noise
# floor, 16 kHz mono 16-bit, and their references (references.json: per clip the speaker turns with
# text and timing). The WAV files are committed, so tests need neither espeak-ng nor sox; run this only
# to change the fixtures. Needs: espeak-ng, sox (Debian packages of the same names).
set -euo pipefail
cd "$(dirname "$0")"

RATE=16000
GAP=1.0        # silence between turns: longer than the delegate's 0.5 s end-of-utterance cut
LEAD=0.6       # silence before the first turn
TAIL=1.2       # silence after the last turn, so a streaming client sees the end of speech
SPEED=145      # words per minute
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

# Speakers and their voices: different espeak-ng variants make different-sounding people.
declare -A VOICE=(
  [Peter]="en-gb-x-rp+m1"
  [Anna]="en-gb+f4"
  [Ondrej]="en+m5"
  [Katie]="en-us+f2"
)

# Who is in each meeting (speakers and the people they address): the names recognition is biased to.
declare -A ATTENDEES=(
  [name_cue]="Peter|Sirui Zhao"
  [standup]="Anna|Peter|Ondrej"
  [planning]="Katie|Ondrej"
  [cue_named]="Peter|Sirui Zhao"
  [cue_implicit]="Peter|Sirui Zhao"
)

# Clips: one "speaker|text" line per turn; texts avoid digits and quotes so references stay plain.
declare -A CLIPS
CLIPS[name_cue]="Peter|Good morning everyone, thanks for joining the weekly sync.
Peter|Sirui, could you give us an update on the data collection?"
CLIPS[standup]="Anna|Let us start with a quick round. Peter, how is the annotation going?
Peter|Thanks Anna. The annotation tool is almost finished, and I will share a document with everyone tomorrow.
Ondrej|That sounds good. Can we also check the test set before the review on Friday?
Anna|Yes, I will send an email to the whole team after this call.
Ondrej|Great, then I will schedule a meeting with the reviewers for next week."
CLIPS[planning]="Katie|We need to decide which model we deploy for the workshop demo.
Ondrej|I would keep the small model. It is fast enough on a laptop and the quality is fine.
Katie|Okay. Who can prepare the slides for the presentation?
Ondrej|I can do that, but I need the latest results from the experiments first."
# Cues for the voice-to-voice benchmark (principal_sirui.json answers both from its background): one names
# the principal, one asks without a name, a question whose floor falls to the principal (an implicit cue).
CLIPS[cue_named]="Peter|Sirui, how is the data collection going?"
CLIPS[cue_implicit]="Peter|Could you give us an update on the data collection?"

json_escape() { local s=$1; s=${s//\\/\\\\}; s=${s//\"/\\\"}; printf '%s' "$s"; }
seconds() { soxi -D "$1"; }

silence() { sox -n -r $RATE -c 1 -b 16 "$2" trim 0 "$1"; }

{
  printf '{\n  "format": "delegate-audio/1",\n  "sample_rate": %d,\n  "clips": {\n' $RATE
  first_clip=1
  for clip in name_cue standup planning cue_named cue_implicit; do
    parts=()
    silence $LEAD "$WORK/lead.wav"
    parts+=("$WORK/lead.wav")
    t=$LEAD
    segments=""
    full=""
    i=0
    while IFS='|' read -r speaker text; do
      raw="$WORK/$clip-$i-raw.wav"
      seg="$WORK/$clip-$i.wav"
      espeak-ng -v "${VOICE[$speaker]}" -s $SPEED -w "$raw" "$text"
      # Resample and trim espeak's own leading/trailing silence so the timings are the speech itself.
      sox "$raw" -r $RATE -c 1 -b 16 "$seg" silence 1 0.02 0.5% reverse silence 1 0.02 0.5% reverse
      d=$(seconds "$seg")
      start=$t
      end=$(echo "$t + $d" | bc -l)
      [ -n "$segments" ] && segments+=$',\n'
      segments+=$(printf '        {"speaker": "%s", "text": "%s", "start": %.3f, "end": %.3f}' \
        "$speaker" "$(json_escape "$text")" "$start" "$end")
      full+="${full:+ }$text"
      silence $GAP "$WORK/gap-$clip-$i.wav"
      parts+=("$seg" "$WORK/gap-$clip-$i.wav")
      t=$(echo "$end + $GAP" | bc -l)
      i=$((i + 1))
    done <<< "${CLIPS[$clip]}"
    silence $TAIL "$WORK/tail.wav"
    parts+=("$WORK/tail.wav")
    sox "${parts[@]}" "$WORK/$clip-speech.wav"
    # A faint noise floor: real rooms are never digitally silent, and the VAD must cope with that.
    total=$(seconds "$WORK/$clip-speech.wav")
    sox -n -r $RATE -c 1 -b 16 "$WORK/$clip-noise.wav" synth "$total" pinknoise vol 0.004
    sox -m "$WORK/$clip-speech.wav" "$WORK/$clip-noise.wav" -b 16 "$clip.wav" norm -3
    [ $first_clip -eq 1 ] || printf ',\n'
    first_clip=0
    IFS='|' read -ra names <<< "${ATTENDEES[$clip]}"
    attendees=""
    for name in "${names[@]}"; do attendees+="${attendees:+, }\"$name\""; done
    printf '    "%s": {\n      "file": "%s.wav",\n      "duration": %.3f,\n      "attendees": [%s],\n      "text": "%s",\n      "segments": [\n%s\n      ]\n    }' \
      "$clip" "$clip" "$total" "$attendees" "$(json_escape "$full")" "$segments"
  done
  printf '\n  }\n}\n'
} > references.json

du -ch ./*.wav | tail -n 1
