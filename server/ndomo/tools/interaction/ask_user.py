"""The `ask_user` tool: one question to the person at the editor or terminal."""

from __future__ import annotations

from pydantic import ConfigDict, Field, field_validator

from ndomo.runtime.context import TurnContext
from ndomo.runtime.tools import ToolResult, tool
from ndomo.schema import Schema

NO_ANSWER = "the user did not answer"


class AskUserParams(Schema):
    model_config = ConfigDict(extra="forbid")
    question: str = Field(min_length=1, max_length=2000)
    choices: list[str] | None = Field(default=None, max_length=12)

    @field_validator("choices")
    @classmethod
    def _clean(cls, v: list[str] | None) -> list[str] | None:
        if v is None:
            return None
        cleaned = list(dict.fromkeys(c.strip() for c in v if c.strip()))
        return cleaned or None


@tool(
    "ask_user",
    AskUserParams,
    description="Ask the user one question and wait.",
    risk="read",
    permission="question",
)
async def ask_user(ctx: TurnContext, p: AskUserParams) -> ToolResult:
    answer = await ctx.host.ask(p.question, p.choices)
    if answer is None or not str(answer).strip():
        return ToolResult(content=NO_ANSWER, data={"answer": None})
    answer = str(answer).strip()
    return ToolResult(content=f"the user answered: {answer}", data={"answer": answer})
