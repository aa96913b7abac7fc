import com.alibaba.fastjson.JSON;
import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.reflect.Field;
import java.nio.charset.StandardCharsets;
import java.security.Permission;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.rocketmq.tools.command.MQAdminStartup;

/**
 * Many mqadmin commands in one JVM (a JVM start costs seconds): one JSON array of arguments per stdin line,
 * one JSON object per command on stdout: {"args", "stdout", "stderr", "exit"}.
 *
 * <p>Each command runs exactly as {@code MQAdminStartup.main} would run it: {@code main0(args, null)}
 * (4.9.7's main0 ignores its hook argument and reads the ACL hook from ROCKETMQ_HOME anyway), on a fresh
 * list of sub command objects. What differs is only what surrounds it: System.out/System.err are swapped for buffers while it runs, and the
 * System.exit that commons-cli parsing calls on a bad or -h command line becomes an exception whose code
 * is reported as "exit" (0 when the command returned). A command that does not finish within the
 * timeout (ms, first argument, default 60000) is reported with exit -2 and the batch goes on.
 * Needs {@code -Djava.security.manager=allow} on JDK 18+ (JDK 17 allows it with a warning).
 */
public final class MqadminBatch {
    /** What System.exit threw instead of exiting: an Error, so main0's catch (Exception) lets it through. */
    static final class ExitTrapped extends Error {
        final int status;

        ExitTrapped(int status) {
            super("System.exit(" + status + ") trapped by MqadminBatch");
            this.status = status;
        }
    }

    public static void main(String[] argv) throws Exception {
        long timeoutMs = argv.length > 0 ? Long.parseLong(argv[0]) : 60000L;
        final PrintStream realOut = System.out;
        final PrintStream realErr = System.err;
        System.setSecurityManager(new SecurityManager() {
            @Override
            public void checkPermission(Permission perm) {
                // everything is allowed: this manager only exists to trap exit
            }

            @Override
            public void checkPermission(Permission perm, Object context) {
            }

            @Override
            public void checkExit(int status) {
                throw new ExitTrapped(status);
            }
        });
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.trim().isEmpty()) {
                continue;
            }
            List<String> args = JSON.parseArray(line, String.class);
            Map<String, Object> result = run(args.toArray(new String[0]), timeoutMs, realErr);
            System.setOut(realOut);
            System.setErr(realErr);
            realOut.println(JSON.toJSONString(result));
            realOut.flush();
        }
        System.setSecurityManager(null);
        // The client keeps non-daemon threads (timers, netty) alive after a command: end here.
        Runtime.getRuntime().halt(0);
    }

    /**
     * main0 appends a new instance of every sub command to a static list on each call and runs the first
     * match, so a second call would reuse the first call's object (SendMessageCommand keeps its shut-down
     * producer in a field). Emptying the list first gives each command fresh objects, as a new JVM does.
     */
    @SuppressWarnings("unchecked")
    private static void freshCommands() {
        try {
            Field f = MQAdminStartup.class.getDeclaredField("subCommandList");
            f.setAccessible(true);
            ((List<Object>) f.get(null)).clear();
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("MQAdminStartup.subCommandList not found", e);
        }
    }

    private static Map<String, Object> run(final String[] args, long timeoutMs, PrintStream realErr)
        throws InterruptedException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        final int[] exit = {0};
        final PrintStream cmdOut = new PrintStream(out, true);
        final PrintStream cmdErr = new PrintStream(err, true);
        System.setOut(cmdOut);
        System.setErr(cmdErr);
        freshCommands();
        Thread worker = new Thread(new Runnable() {
            @Override
            public void run() {
                try {
                    MQAdminStartup.main0(args, null);
                } catch (ExitTrapped e) {
                    exit[0] = e.status;
                } catch (Throwable t) {
                    // main0 catches Exception itself; an Error (or anything else) escaping is reported as -1
                    t.printStackTrace(cmdErr);
                    exit[0] = -1;
                }
            }
        }, "mqadmin-batch");
        worker.setDaemon(true);
        worker.start();
        worker.join(timeoutMs);
        if (worker.isAlive()) {
            exit[0] = -2;
            cmdErr.println("MqadminBatch: command still running after " + timeoutMs + " ms");
        }
        cmdOut.flush();
        cmdErr.flush();
        Map<String, Object> result = new LinkedHashMap<String, Object>();
        result.put("args", args);
        result.put("stdout", new String(out.toByteArray(), StandardCharsets.UTF_8));
        result.put("stderr", new String(err.toByteArray(), StandardCharsets.UTF_8));
        result.put("exit", exit[0]);
        return result;
    }
}
