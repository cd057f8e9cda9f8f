package pps.neo4j;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import org.neo4j.configuration.GraphDatabaseSettings;
import org.neo4j.configuration.connectors.BoltConnector;
import org.neo4j.configuration.connectors.BoltConnectorInternalSettings;
import org.neo4j.configuration.helpers.SocketAddress;
import org.neo4j.harness.Neo4j;
import org.neo4j.harness.Neo4jBuilders;

/**
 * Neo4j (community, from neo4j-harness) in this process, for tests and local use.
 *
 * <p>Usage: Launcher DATA_DIR [PASSWORD] [PORT]. Bolt only (no HTTP), on 127.0.0.1:PORT
 * (0, the default: a free port), authentication on for the user neo4j with PASSWORD
 * (default pps-test-password). Prints "bolt://127.0.0.1:PORT" on stdout once it accepts
 * connections, then runs until SIGTERM (or SIGINT), when it shuts the database down.
 * The harness keeps its files in a folder of its own under DATA_DIR and removes it at the
 * end: a fresh, empty database each start.
 */
public final class Launcher {
  public static void main(String[] args) throws Exception {
    if (args.length < 1) {
      System.err.println("usage: Launcher DATA_DIR [PASSWORD] [PORT]");
      System.exit(2);
    }
    Path dir = Files.createDirectories(Path.of(args[0]));
    String password = args.length > 1 ? args[1] : "pps-test-password";
    int port = args.length > 2 ? Integer.parseInt(args[2]) : 0;

    Neo4j neo4j =
        Neo4jBuilders.newInProcessBuilder(dir)
            .withDisabledServer()
            .withConfig(BoltConnector.enabled, true)
            .withConfig(BoltConnector.listen_address, new SocketAddress("127.0.0.1", port))
            .withConfig(GraphDatabaseSettings.auth_enabled, true)
            // A test server: no grace period for clients on SIGTERM (Bolt waits ~10 s).
            .withConfig(BoltConnectorInternalSettings.connection_shutdown_wait_time, Duration.ZERO)
            .withConfig(BoltConnectorInternalSettings.thread_pool_shutdown_wait_time, Duration.ZERO)
            .build();
    CountDownLatch stopped = new CountDownLatch(1);
    Runtime.getRuntime()
        .addShutdownHook(
            new Thread(
                () -> {
                  neo4j.close();
                  stopped.countDown();
                }));
    // Embedded calls skip authentication: set the test password, no change required.
    neo4j
        .databaseManagementService()
        .database(GraphDatabaseSettings.SYSTEM_DATABASE_NAME)
        .executeTransactionally(
            "ALTER USER neo4j SET PLAINTEXT PASSWORD $password CHANGE NOT REQUIRED",
            Map.of("password", password));
    System.out.println("bolt://127.0.0.1:" + neo4j.boltURI().getPort());
    System.out.flush();
    stopped.await();
  }
}
