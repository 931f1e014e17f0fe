"""Claude's memory tool, with its /memories files kept as box-memory memories.

Usage: python examples/claude_memory_tool.py WORKSPACE

With ANTHROPIC_API_KEY set (and `pip install 'box-memory[anthropic]'`), runs a two-turn
conversation in which Claude saves and then reads back a memory through the `memory` tool; every
file it writes is an append-only box-memory memory (see `box-memory get <id> --history`).
Without a key it says so and exits 0 after driving the same tool directly, so you can see what
Claude would see. Model: env BOX_MEMORY_EXAMPLE_MODEL (default claude-sonnet-4-5).
"""

from __future__ import annotations

import os
import sys


def main() -> int:
    workspace = sys.argv[1] if len(sys.argv) > 1 else None
    try:
        from box_memory.integrations.anthropic import BoxMemoryTool
    except ImportError:
        print("The anthropic SDK is not installed: pip install 'box-memory[anthropic]'")
        return 0
    from anthropic.types.beta import BetaMemoryTool20250818CreateCommand, BetaMemoryTool20250818ViewCommand

    tool = BoxMemoryTool(workspace)
    try:
        if not os.environ.get("ANTHROPIC_API_KEY"):
            print("ANTHROPIC_API_KEY is not set: skipping the Claude conversation.")
            print("Driving the memory tool directly instead (what Claude's tool calls would do):")
            print(tool.execute(BetaMemoryTool20250818CreateCommand(
                command="create", path="/memories/preferences.md", file_text="- prefers tea, no sugar\n"
            )))  # fmt: skip
            print(tool.execute(BetaMemoryTool20250818ViewCommand(command="view", path="/memories")))
            return 0

        import anthropic

        client = anthropic.Anthropic()
        model = os.environ.get("BOX_MEMORY_EXAMPLE_MODEL", "claude-sonnet-4-5")
        for prompt in (
            "Please remember that I take my tea without sugar, and that our deploys happen on Tuesdays.",
            "What do you remember about me? Check your memory directory first.",
        ):
            print(f"\n> {prompt}")
            runner = client.beta.messages.tool_runner(
                model=model,
                max_tokens=1024,
                tools=[tool],
                messages=[{"role": "user", "content": prompt}],
                betas=["context-management-2025-06-27"],
            )
            for message in runner:
                for block in message.content:
                    if block.type == "text":
                        print(block.text)
                    elif block.type == "tool_use":
                        print(f"[memory tool: {block.input}]")
        return 0
    finally:
        tool.close()


if __name__ == "__main__":
    raise SystemExit(main())
