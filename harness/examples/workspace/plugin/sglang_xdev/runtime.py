"""Thin wrapper over the vendor runtime (absent on machines without an xdev card)."""


def _driver():
    import xdev_runtime  # the vendor's driver bindings

    return xdev_runtime


def init() -> None:
    _driver().init()


def total_memory(device_id: int) -> int:
    return _driver().total_memory(device_id)


def device_name(device_id: int) -> str:
    return _driver().device_name(device_id)


def empty_cache() -> None:
    _driver().empty_cache()


def synchronize() -> None:
    _driver().synchronize()
