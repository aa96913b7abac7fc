import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;

import org.apache.rocketmq.acl.plain.PlainAccessValidator;
import org.apache.rocketmq.remoting.common.RemotingHelper;
import org.apache.rocketmq.remoting.protocol.RemotingCommand;

/**
 * Java 4.9's plain ACL check, without a broker: the reference rocketq's acl/validator is compared with.
 *
 * Usage: AclValidatorCheck HOME (HOME/conf/plain_acl.yml holds the accounts). Reads one request per stdin
 * line: ip TAB code TAB extFields as a JSON-free "k=v" list separated by \u0003 TAB body; prints one line per
 * request: "RESULT\tOK" or "RESULT\t" + the remark a Java broker answers a refusal with.
 */
public class AclValidatorCheck {
    public static void main(String[] args) throws Exception {
        System.setProperty("rocketmq.home.dir", args[0]);
        PlainAccessValidator validator = new PlainAccessValidator();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            String[] parts = line.split("\t", -1);
            RemotingCommand cmd = RemotingCommand.createRequestCommand(Integer.parseInt(parts[1]), null);
            HashMap<String, String> ext = new HashMap<>();
            for (String pair : parts[2].split("\u0003")) {
                if (!pair.isEmpty()) {
                    int eq = pair.indexOf('=');
                    ext.put(pair.substring(0, eq), pair.substring(eq + 1));
                }
            }
            cmd.setExtFields(ext);
            if (!parts[3].isEmpty()) {
                cmd.setBody(parts[3].getBytes(StandardCharsets.UTF_8));
            }
            String result;
            try {
                validator.validate(validator.parse(cmd, parts[0] + ":40000"));
                result = "OK";
            } catch (Throwable e) {
                result = RemotingHelper.exceptionSimpleDesc(e);
            }
            System.out.println("RESULT\t" + result);
        }
        System.out.flush();
        System.exit(0);  // the validator's file watcher is not a daemon thread
    }
}
