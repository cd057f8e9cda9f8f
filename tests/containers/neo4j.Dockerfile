# The stand-in for neo4j:5.26-community where that image cannot be pulled
# (tests/containers/setup builds it; pps.neo4j.Image says what it honours).
ARG BASE
FROM ${BASE}
COPY lib/ /var/lib/neo4j/lib/
COPY classes/ /var/lib/neo4j/classes/
RUN useradd --system --user-group --uid 7474 --home-dir /var/lib/neo4j neo4j \
 && install -d -o neo4j -g neo4j /data /logs /var/lib/neo4j/conf
VOLUME ["/data", "/logs"]
USER neo4j
EXPOSE 7474 7687
CMD ["java", "-XX:+ExitOnOutOfMemoryError", "-cp", "/var/lib/neo4j/classes:/var/lib/neo4j/lib/*", "pps.neo4j.Image"]
