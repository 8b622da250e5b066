-- reference.lua lists a fanout child under its parent (lib_topics.lua reference),
-- for references that run no other topic script (a topic's settings read or
-- changed).
-- KEYS: the shared layout (contract.lua) with one topic.
-- ARGV: origin, topic.
-- Returns 1.
reference(topic_keys(1, ARGV[A.topic]), now_ms())
return 1
