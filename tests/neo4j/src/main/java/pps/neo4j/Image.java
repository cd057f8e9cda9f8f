package pps.neo4j;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CountDownLatch;
import org.neo4j.cli.ExecutionContext;
import org.neo4j.commandline.admin.security.SetInitialPasswordCommand;
import org.neo4j.server.CommunityBootstrapper;
import picocli.CommandLine;

/**
 * The entry point of the stand-in for the official {@code neo4j:5.26-community} image
 * (tests/containers/neo4j), used only where that image cannot be pulled. It is Neo4j 5.26
 * community's own server (the bootstrapper {@code neo4j console} runs, with its HTTP and
 * Bolt connectors), kept to the part of the official image's contract that compose.yaml
 * and the tests rely on:
 *
 * <ul>
 *   <li>{@code NEO4J_AUTH=neo4j/PASSWORD} sets the initial password (as {@code neo4j-admin
 *       dbms set-initial-password} does: on a database that already exists it changes
 *       nothing); {@code NEO4J_AUTH=none} turns authentication off;
 *   <li>{@code NEO4J_<name>_FILE=PATH} is {@code NEO4J_<name>} with the file's content (the
 *       way compose.yaml hands it the password);
 *   <li>every other {@code NEO4J_<setting>} variable is a setting, named as the official
 *       image names them: {@code _} is {@code .}, {@code __} is {@code _} (so {@code
 *       NEO4J_dbms_usage__report_enabled} is {@code dbms.usage_report.enabled});
 *   <li>HTTP on 7474 and Bolt on 7687, on every interface of the container;
 *   <li>the database in {@code /data}, the logs in {@code /logs}.
 * </ul>
 *
 * <p>Runs until SIGTERM, when it shuts the database down.
 */
public final class Image {
  private static final Path HOME = Path.of("/var/lib/neo4j");
  private static final List<String> NOT_SETTINGS =
      List.of("NEO4J_AUTH", "NEO4J_HOME", "NEO4J_CONF", "NEO4J_EDITION");

  public static void main(String[] args) throws Exception {
    Map<String, String> env = environment();
    Map<String, String> settings = new TreeMap<>();
    settings.put("server.default_listen_address", "0.0.0.0");
    settings.put("server.http.listen_address", ":7474");
    settings.put("server.bolt.listen_address", ":7687");
    settings.put("server.https.enabled", "false");
    settings.put("server.directories.data", "/data");
    settings.put("server.directories.logs", "/logs");
    env.forEach(
        (name, value) -> {
          if (name.startsWith("NEO4J_") && !NOT_SETTINGS.contains(name)) {
            settings.put(setting(name), value);
          }
        });

    String auth = env.getOrDefault("NEO4J_AUTH", "");
    boolean authEnabled = !auth.equals("none");
    settings.put("dbms.security.auth_enabled", Boolean.toString(authEnabled));
    Path confDir = Files.createDirectories(HOME.resolve("conf"));
    Path conf = confDir.resolve("neo4j.conf");
    write(conf, settings);

    if (authEnabled) {
      String[] userAndPassword = auth.split("/", 2);
      if (userAndPassword.length != 2 || !userAndPassword[0].equals("neo4j")) {
        fail("NEO4J_AUTH must be neo4j/PASSWORD or none, not " + userAndPassword[0] + "/...");
      }
      int done =
          new CommandLine(new SetInitialPasswordCommand(new ExecutionContext(HOME, confDir)))
              .execute(userAndPassword[1]);
      if (done != 0) {
        fail("the initial password was refused (8 or more characters)");
      }
    }

    CommunityBootstrapper server = new CommunityBootstrapper();
    CountDownLatch stopped = new CountDownLatch(1);
    Runtime.getRuntime()
        .addShutdownHook(
            new Thread(
                () -> {
                  server.stop();
                  stopped.countDown();
                }));
    int status = server.start(HOME, conf, Map.of(), false, false);
    if (status != 0) {
      fail("Neo4j did not start (status " + status + "): see /logs");
    }
    stopped.await();
  }

  /** The environment, each NEO4J_<name>_FILE read as NEO4J_<name>. */
  static Map<String, String> environment() throws IOException {
    Map<String, String> env = new TreeMap<>(System.getenv());
    for (String name : List.copyOf(env.keySet())) {
      if (name.startsWith("NEO4J_") && name.endsWith("_FILE")) {
        String value = Files.readString(Path.of(env.remove(name))).strip();
        env.put(name.substring(0, name.length() - "_FILE".length()), value);
      }
    }
    return env;
  }

  /** The setting an environment variable names: NEO4J_dbms_usage__report_enabled is
   * dbms.usage_report.enabled. */
  static String setting(String variable) {
    return variable.substring("NEO4J_".length()).replace("__", "\0").replace('_', '.')
        .replace('\0', '_');
  }

  private static void write(Path conf, Map<String, String> settings) throws IOException {
    List<String> lines = new ArrayList<>();
    settings.forEach((name, value) -> lines.add(name + "=" + value));
    Files.write(conf, lines);
  }

  private static void fail(String why) {
    System.err.println("neo4j stand-in: " + why);
    System.exit(1);
  }
}
