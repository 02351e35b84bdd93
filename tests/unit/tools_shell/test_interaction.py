from __future__ import annotations

from ndomo.runtime.host import BaseHost


class AnsweringHost(BaseHost):
    def __init__(self, answer):
        super().__init__()
        self.answer = answer
        self.asked = []

    async def ask(self, question, choices=None):
        self.asked.append((question, choices))
        return self.answer


async def test_ask_user_answer_and_no_answer(make_ctx):
    host = AnsweringHost("blue")
    ctx = await make_ctx("discussion", host)
    res = await ctx.runtime.plugins.tools.execute(
        ctx, "ask_user", {"question": "Which colour?", "choices": ["red", "blue", " blue ", ""]}
    )
    assert res.ok and res.content == "the user answered: blue" and res.data == {"answer": "blue"}
    assert host.asked == [("Which colour?", ["red", "blue"])]
    silent = await make_ctx("autopilot", AnsweringHost(None))
    res = await silent.runtime.plugins.tools.execute(silent, "ask_user", {"question": "Anyone?"})
    assert res.content == "the user did not answer"
    assert ask_user_permission() == "question"


def ask_user_permission():
    from ndomo.tools.interaction.ask_user import ask_user

    return ask_user.permission


async def test_remember_saves_then_merges(make_ctx):
    ctx = await make_ctx("brainstorming")
    run = ctx.runtime.plugins.tools.execute
    first = await run(
        ctx, "remember", {"content": "The API uses OAuth2 device flow.", "category": "fact"}
    )
    assert first.ok and first.content.startswith("saved #") and not first.data["merged"]
    again = await run(
        ctx, "remember", {"content": "The API uses OAuth2 device flow!", "category": "fact"}
    )
    assert again.content.startswith(f"merged with note #{first.data['id']}")
    other = await run(ctx, "remember", {"content": "Prefer tabs", "category": "preference"})
    assert other.data["id"] != first.data["id"]
    bad = await run(ctx, "remember", {"content": "x", "category": "gossip"})
    assert bad.status == "failed" and "category" in bad.content
    store = await ctx.app.store()
    assert len(await store.list_memories("fact")) == 1
