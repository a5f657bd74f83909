"""Scrape a bot's ``/metrics`` over HTTP and read values, with the official client's parser
(so a scrape that is not valid Prometheus text fails the test)."""

from __future__ import annotations

from dataclasses import dataclass

import aiohttp
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample


@dataclass
class Scrape:
    content_type: str
    text: str
    samples: list[Sample]

    def value(self, name: str, **labels: str) -> float:
        """The sum over samples called ``name`` whose labels include ``labels`` (0: none)."""
        return sum(
            s.value
            for s in self.samples
            if s.name == name and all(s.labels.get(k) == v for k, v in labels.items())
        )

    def labelsets(self, name: str) -> list[dict[str, str]]:
        return [dict(s.labels) for s in self.samples if s.name == name]

    def families(self) -> set[str]:
        """Every metric name in the scrape, as the ``# TYPE`` lines declare them."""
        return {line.split()[2] for line in self.text.splitlines() if line.startswith("# TYPE ")}

    def sample_names(self) -> set[str]:
        return {s.name for s in self.samples}


async def scrape(base_url: str) -> Scrape:
    async with aiohttp.ClientSession() as http, http.get(f"{base_url}/metrics") as resp:
        assert resp.status == 200, await resp.text()
        text = await resp.text()
        content_type = resp.headers["Content-Type"]
    samples = [s for f in text_string_to_metric_families(text) for s in f.samples]
    return Scrape(content_type, text, samples)
