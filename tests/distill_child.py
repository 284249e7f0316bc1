"""A separate process for the distillation kill test.

    python tests/distill_child.py AGENT_DIR CREW_DIR LLM_URL

Starts a MemoryService on the tiers, distils every daily log of the agent tier once
against the OpenAI-compatible server at LLM_URL, prints the report as one JSON line and
stops. The test SIGKILLs it at chosen moments.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from sidecar.config import Settings
from sidecar.lifecycle.distill import Distiller
from sidecar.llm.factory import make_client
from sidecar.service import MemoryService


async def main(agent: Path, crew: Path, url: str) -> None:
    settings = Settings(
        agent_dir=agent, crew_dir=crew, role="lead", reconcile_interval=3600, embedder="none"
    )
    svc = MemoryService(settings)
    await svc.start()
    await svc.facts.stop()  # only the distiller asks the model here
    llm = make_client("openai", url, "stub-3b", None, 30.0)
    days = [(f"daily/{p.name}", p.read_text()) for p in sorted((agent / "daily").glob("*.md"))]
    try:
        report = await Distiller(settings, llm, svc.notes, svc.learnings, svc.journal)(
            "agent", days
        )
        print(json.dumps(report), flush=True)
    finally:
        await llm.close()
        await svc.stop()


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]))
