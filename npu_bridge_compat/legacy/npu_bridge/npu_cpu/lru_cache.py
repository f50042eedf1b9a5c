"""`npu_bridge.npu_cpu.lru_cache`: the embedding service's device cache."""

from npu_bridge_compat.errors import device_only

LruCache = device_only("npu_cpu.lru_cache.LruCache", "embedding tables live in host memory; no cache is needed")
