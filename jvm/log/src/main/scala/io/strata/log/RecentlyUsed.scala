package io.strata.log

/**
 * A map bounded to the `max` most recently used keys (a read or a write uses a key), for the per-JVM caches of table
 * states: when it grows past `max`, the least recently used entry leaves and `evicted` is told (e.g. to unpersist
 * it). Thread-safe; `evicted` runs under the map's lock, so it must not block on other caches.
 */
final class RecentlyUsed[K, V](max: Int, evicted: V => Unit = (_: V) => ()) {
  require(max > 0, s"max must be positive, was $max")
  private val entries = new java.util.LinkedHashMap[K, V](16, 0.75f, true) // access order: least recent first

  def get(key: K): Option[V] = synchronized(Option(entries.get(key)))

  def contains(key: K): Boolean = synchronized(entries.containsKey(key))

  /** Puts `value` for `key`; returns the value it replaced (not told to `evicted`: the caller has it). */
  def put(key: K, value: V): Option[V] = synchronized {
    val replaced = Option(entries.put(key, value))
    while (entries.size > max) {
      val eldest = entries.entrySet.iterator.next()
      entries.remove(eldest.getKey)
      evicted(eldest.getValue)
    }
    replaced
  }

  /** Puts `value` for `key` when `replaces` holds of the current value (None: none), as one step. */
  def putIf(key: K, value: V)(replaces: Option[V] => Boolean): Unit = synchronized {
    if (replaces(Option(entries.get(key)))) put(key, value)
  }

  def remove(key: K): Option[V] = synchronized(Option(entries.remove(key)))

  /** Removes every entry and returns them (least recently used first). */
  def clear(): Seq[V] = synchronized {
    val all = scala.jdk.CollectionConverters.CollectionHasAsScala(entries.values).asScala.toList
    entries.clear()
    all
  }
}
