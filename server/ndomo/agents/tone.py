"""The terse-tone line every shipped agent prompt opens with (kept in one place for tests and docs)."""

TONE_SNIPPET = (
    "Tone: terse — no greetings, no filler, fragments fine. "
    "Normal prose for safety warnings, irreversible actions and multi-step ambiguity."
)
