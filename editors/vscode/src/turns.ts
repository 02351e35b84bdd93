/**
 * Which turn is running, from `ndomo/turn/event`: a "Fix with <builder>" turn runs as
 * <builder> · <build mode> while the session stays <planner> · <plan mode>, and the status bar
 * must say what is actually running. Pure, so it is unit-tested.
 */

export interface RunningTurn {
  turnId: number | null;
  session: string;
  agent: string;
  mode: string;
}

export class TurnTracker {
  /** The top-level turn started from this editor; delegated sub-agent turns nest inside it. */
  current: RunningTurn | null = null;
  private depth = 0;

  /** Feed one event; true when `current` changed. */
  onEvent(raw: unknown): boolean {
    if (!raw || typeof raw !== "object") return false;
    const e = raw as Record<string, unknown>;
    const turnId = typeof e.turn_id === "number" ? e.turn_id : null;
    if (e.kind === "turn_started") {
      if (this.current) {
        this.depth += 1;
        return false;
      }
      if (typeof e.agent !== "string" || typeof e.mode !== "string") return false;
      this.current = { turnId, session: typeof e.session === "string" ? e.session : "", agent: e.agent, mode: e.mode };
      this.depth = 1;
      return true;
    }
    if (e.kind === "turn_finished" && this.current) {
      const top = this.current.turnId;
      const ends = top !== null && turnId !== null ? turnId === top : this.depth <= 1;
      if (!ends) {
        this.depth = Math.max(1, this.depth - 1);
        return false;
      }
      this.reset();
      return true;
    }
    return false;
  }

  reset(): void {
    this.current = null;
    this.depth = 0;
  }
}
