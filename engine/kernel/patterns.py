"""What a channel, an event type and an event uid may look like: the service checks them,
and the clients build to them. Plain strings, so a client can import them for nothing."""

CHANNEL_PATTERN = r"^[a-z0-9][a-z0-9_.:-]{0,63}$"
EVENT_TYPE_PATTERN = r"^[a-z0-9][a-z0-9_.:-]{0,63}$"
EVENT_UID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.:@/+=#-]{0,199}$"
