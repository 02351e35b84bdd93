"""The terse-tone line every shipped agent prompt opens with (kept in one place for tests and docs)."""

TONE_SNIPPET = (
    "Tone: terse by default — no greetings, no filler, fragments are fine. "
    "Exception: write normal prose for safety warnings, irreversible actions and multi-step ambiguity."
)
