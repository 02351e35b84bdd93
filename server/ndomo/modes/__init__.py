"""One folder per mode: discussion, brainstorming, autopilot."""
