"""Stand-ins and the demo: the Kubernetes API stand-in (``kubesim``), the Slack stand-in
(``slacksim``), the fake NVML (``fake_nvml``), the scenarios, and ``gpunode demo``
(``demo``, ``story``, ``corpus``). Product code reaches it only through the CLI's ``demo``
and ``sandbox`` commands and ``gpunode collect --fake-nvml``, each imported lazily.

The sandbox is not the product: the wheel and the image leave it out, and an import contract
keeps the product from importing it. The stand-ins (``kubesim``, ``slacksim``, ``fake_nvml``)
import nothing from the product either (another contract): they report what the API server,
the kubelet, the kernel and Slack would, from their own model, so a test against them checks
gpunode's arithmetic rather than repeating it. The drivers (``demo``, ``story``, ``corpus``)
run the product against them and may import it."""
