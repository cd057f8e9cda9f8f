package pps.neo4j;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import org.neo4j.configuration.GraphDatabaseSettings;
import org.neo4j.configuration.connectors.BoltConnector;
import org.neo4j.configuration.connectors.BoltConnectorInternalSettings;
import org.neo4j.configuration.connectors.ConnectorPortRegister;
import org.neo4j.configuration.connectors.ConnectorType;
import org.neo4j.configuration.helpers.SocketAddress;
import org.neo4j.dbms.api.DatabaseManagementService;
import org.neo4j.dbms.api.DatabaseManagementServiceBuilder;
import org.neo4j.graphdb.QueryExecutionException;
import org.neo4j.kernel.internal.GraphDatabaseAPI;

/**
 * Neo4j 5 community, embedded in this process: for tests, and for running pps against a
 * local Neo4j without Docker.
 *
 * <p>Usage: Launcher DATA_DIR [PASSWORD] [PORT]. Bolt only (no HTTP), on 127.0.0.1:PORT
 * (0, the default: a free port), authentication on for the user neo4j with PASSWORD
 * (default pps-test-password). The database lives in DATA_DIR and is kept: a second start
 * on the same folder finds it as it was left (also after a SIGKILL; Neo4j recovers from
 * its transaction log). Prints "bolt://127.0.0.1:PORT" on stdout once it accepts
 * connections, then runs until SIGTERM (or SIGINT), when it shuts the database down.
 */
public final class Launcher {
  public static void main(String[] args) throws Exception {
    if (args.length < 1) {
      System.err.println("usage: Launcher DATA_DIR [PASSWORD] [PORT]");
      System.exit(2);
    }
    Path dir = Files.createDirectories(Path.of(args[0]).toAbsolutePath());
    String password = args.length > 1 ? args[1] : "pps-test-password";
    int port = args.length > 2 ? Integer.parseInt(args[2]) : 0;

    DatabaseManagementService dbms =
        new DatabaseManagementServiceBuilder(dir)
            .setConfig(BoltConnector.enabled, true)
            .setConfig(BoltConnector.listen_address, new SocketAddress("127.0.0.1", port))
            .setConfig(GraphDatabaseSettings.auth_enabled, true)
            // Neo4j reports usage to its makers unless told not to; pps sends nothing.
            .setConfig(GraphDatabaseSettings.udc_enabled, false)
            // No grace period for clients on SIGTERM (Bolt waits ~10 s otherwise).
            .setConfig(BoltConnectorInternalSettings.connection_shutdown_wait_time, Duration.ZERO)
            .setConfig(BoltConnectorInternalSettings.thread_pool_shutdown_wait_time, Duration.ZERO)
            .build();
    CountDownLatch stopped = new CountDownLatch(1);
    Runtime.getRuntime()
        .addShutdownHook(
            new Thread(
                () -> {
                  dbms.shutdown();
                  stopped.countDown();
                }));
    try {
      System.out.println("bolt://127.0.0.1:" + open(dbms, password));
      System.out.flush();
    } catch (RuntimeException e) {
      e.printStackTrace();
      dbms.shutdown();
      System.exit(1);
    }
    stopped.await();
  }

  /** Sets the password of the user neo4j and returns the Bolt port. */
  private static int open(DatabaseManagementService dbms, String password) {
    // Embedded calls skip authentication: set the password, no change required (a second
    // start on the same folder with the same password has nothing to change).
    var system = dbms.database(GraphDatabaseSettings.SYSTEM_DATABASE_NAME);
    try {
      system.executeTransactionally(
          "ALTER USER neo4j SET PLAINTEXT PASSWORD $password CHANGE NOT REQUIRED",
          Map.of("password", password));
    } catch (QueryExecutionException e) {
      if (!e.getMessage().contains("cannot be the same")) {
        throw e;
      }
    }
    return ((GraphDatabaseAPI) system)
        .getDependencyResolver()
        .resolveDependency(ConnectorPortRegister.class)
        .getLocalAddress(ConnectorType.BOLT)
        .getPort();
  }
}
