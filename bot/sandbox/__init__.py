"""Stand-ins and the demo: the Kubernetes API stand-in (``kubesim``), the Slack stand-in
(``slacksim``), the fake NVML (``fake_nvml``), the scenarios, and ``gpunode demo``
(``demo``, ``story``, ``corpus``). Product code reaches it only through the CLI's ``demo``
and ``sandbox`` commands and ``gpunode collect --fake-nvml``, each imported lazily."""
