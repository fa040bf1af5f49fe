"""sglang-xdev: SGLang on the xdev accelerator."""

import os


def activate():
    """Entry point of group sglang.srt.platforms: the platform class path, or None."""
    if os.environ.get("XDEV_VISIBLE_DEVICES") is None and not os.path.exists("/dev/xdev0"):
        return None
    return "sglang_xdev.platform:XdevPlatform"
