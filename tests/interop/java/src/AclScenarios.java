import com.alibaba.fastjson.JSON;
import com.alibaba.fastjson.JSONArray;
import com.alibaba.fastjson.JSONObject;

import org.apache.rocketmq.client.consumer.DefaultMQPullConsumer;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.PullResult;
import org.apache.rocketmq.client.consumer.PullStatus;
import org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueAveragely;
import org.apache.rocketmq.client.exception.MQBrokerException;
import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.remoting.RPCHook;
import org.apache.rocketmq.remoting.protocol.RemotingCommand;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The ACL scenario: the Java client with AclClientRPCHook (or with no credentials) against a broker with
 * aclEnable=true. {@code --cases FILE} holds a JSON array of cases, run one after the other in this JVM,
 * each with its own client instance (an MQClientInstance keeps the RPCHook it was created with):
 *
 * <pre>{"name": "...", "mode": "send|push|pull", "topic": "...", "group": "...",
 *  "accessKey": "...", "secretKey": "...", "securityToken": "...", "count": N, "waitMs": M}</pre>
 *
 * No accessKey means no hook at all; {@code expect}/{@code retryMs}: see untilExpected. {@code send} sends {@code count} messages synchronously (no retries);
 * {@code push} starts a push consumer and waits up to {@code waitMs} for {@code count} messages; {@code pull}
 * reads every queue with DefaultMQPullConsumer from offset 0. Each case prints one line
 * {"event":"case","name","mode","sent"|"received","code","remark","error","refusals"}: {@code code}/{@code remark}
 * are the first broker refusal the API call threw (MQBrokerException), {@code refusals} every refused
 * response (code 1, SYSTEM_ERROR) the client's own requests got, per request code, seen through the hook.
 */
final class AclScenarios {
    private AclScenarios() {
    }

    static void run(RocketqDriver.Opts o) throws Exception {
        String path = o.values.get("cases");
        if (path == null) {
            throw new IllegalArgumentException("acl needs --cases FILE");
        }
        JSONArray cases = JSON.parseArray(new String(Files.readAllBytes(Paths.get(path)), StandardCharsets.UTF_8));
        for (int i = 0; i < cases.size(); i++) {
            Out.emit(untilExpected(o, cases.getJSONObject(i), i));
        }
        Out.emit(Out.done("acl", true));
    }

    /** Records the refusals the client's requests got, then lets the real hook (if any) see the response. */
    static final class Recorder implements RPCHook {
        final RPCHook delegate;
        final Map<String, String> refusals = new LinkedHashMap<String, String>();

        Recorder(RPCHook delegate) {
            this.delegate = delegate;
        }

        public void doBeforeRequest(String remoteAddr, RemotingCommand request) {
            if (delegate != null) {
                delegate.doBeforeRequest(remoteAddr, request);
            }
        }

        public void doAfterResponse(String remoteAddr, RemotingCommand request, RemotingCommand response) {
            if (response != null && response.getCode() == 1) {
                synchronized (refusals) {
                    String key = String.valueOf(request.getCode());
                    if (!refusals.containsKey(key)) {
                        refusals.put(key, response.getRemark());
                    }
                }
            }
            if (delegate != null) {
                delegate.doAfterResponse(remoteAddr, request, response);
            }
        }
    }

    /**
     * A case with {@code "expect": "ok"|"refused"} and {@code "retryMs"} is run again (every 500 ms) until it
     * ends that way or the time is up: a broker applies a changed ACL file when its watcher next looks.
     * The last attempt is reported, with {@code attempts}.
     */
    static JSONObject untilExpected(RocketqDriver.Opts o, JSONObject c, int index) throws Exception {
        long until = System.currentTimeMillis() + Math.min(c.getLongValue("retryMs"), o.remainingMs());
        String expect = c.getString("expect");
        int attempts = 0;
        while (true) {
            JSONObject out = runCase(o, c, index * 1000 + attempts);
            attempts++;
            out.put("attempts", attempts);
            boolean failed = out.containsKey("code") || out.containsKey("error");
            boolean done = expect == null || ("ok".equals(expect) ? !failed : failed);
            if (done || System.currentTimeMillis() >= until) {
                return out;
            }
            Thread.sleep(500);
        }
    }

    static JSONObject runCase(RocketqDriver.Opts o, JSONObject c, int index) throws Exception {
        String mode = c.getString("mode");
        Recorder hook = new Recorder(Clients.aclHook(c.getString("accessKey"), c.getString("secretKey"),
            c.getString("securityToken")));
        String instance = "acl-" + index + "-" + c.getString("name");
        JSONObject out = Out.event("case");
        out.put("name", c.getString("name"));
        out.put("mode", mode);
        try {
            if ("send".equals(mode)) {
                send(o, c, hook, instance, out);
            } else if ("push".equals(mode)) {
                push(o, c, hook, instance, out);
            } else if ("pull".equals(mode)) {
                pull(o, c, hook, instance, out);
            } else {
                throw new IllegalArgumentException("unknown mode " + mode);
            }
        } catch (Exception e) {
            refused(out, e);
        }
        synchronized (hook.refusals) {
            out.put("refusals", new JSONObject(new LinkedHashMap<String, Object>(hook.refusals)));
        }
        return out;
    }

    /** The broker's refusal inside ``e`` (code and remark), else the exception's text. */
    static void refused(JSONObject out, Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof MQBrokerException) {
                out.put("code", ((MQBrokerException) t).getResponseCode());
                out.put("remark", ((MQBrokerException) t).getErrorMessage());
                return;
            }
        }
        out.put("error", String.valueOf(e));
    }

    static void send(RocketqDriver.Opts o, JSONObject c, RPCHook hook, String instance, JSONObject out)
        throws Exception {
        DefaultMQProducer p = new DefaultMQProducer(c.getString("group"), hook);
        p.setRetryTimesWhenSendFailed(0);
        Clients.start(o, p, instance);
        int sent = 0;
        try {
            for (int i = 0; i < c.getIntValue("count"); i++) {
                p.send(Clients.message(c.getString("topic"), "acl", c.getString("name") + "-" + i, "acl " + i));
                sent++;
            }
        } catch (Exception e) {
            refused(out, e);
        } finally {
            out.put("sent", sent);
            p.shutdown();
        }
    }

    static void push(RocketqDriver.Opts o, JSONObject c, RPCHook hook, String instance, JSONObject out)
        throws Exception {
        DefaultMQPushConsumer pc = new DefaultMQPushConsumer(c.getString("group"), hook,
            new AllocateMessageQueueAveragely());
        pc.setNamesrvAddr(o.namesrv());
        pc.setInstanceName(instance);
        pc.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        pc.subscribe(c.getString("topic"), "*");
        Out.Collector got = new Out.Collector();
        try {
            Scenarios.collect(o, pc, instance, got, Clients.BY_KEYS);
            long until = System.currentTimeMillis() + Math.min(c.getLongValue("waitMs"), o.remainingMs());
            int want = c.getIntValue("count");
            while (System.currentTimeMillis() < until && (want == 0 || got.unique() < want)) {
                Thread.sleep(100);
            }
        } finally {
            out.put("received", got.unique());
            pc.shutdown();
        }
    }

    static void pull(RocketqDriver.Opts o, JSONObject c, RPCHook hook, String instance, JSONObject out)
        throws Exception {
        DefaultMQPullConsumer pc = new DefaultMQPullConsumer(c.getString("group"), hook);
        pc.setNamesrvAddr(o.namesrv());
        pc.setInstanceName(instance);
        pc.start();
        int received = 0;
        try {
            List<MessageQueue> mqs = new ArrayList<MessageQueue>(pc.fetchSubscribeMessageQueues(c.getString("topic")));
            for (MessageQueue mq : mqs) {
                long offset = 0;
                for (int round = 0; round < 100; round++) {
                    PullResult r = pc.pull(mq, "*", offset, 32, 5000);
                    if (r.getPullStatus() != PullStatus.FOUND) {
                        break;
                    }
                    received += r.getMsgFoundList().size();
                    offset = r.getNextBeginOffset();
                }
            }
        } catch (MQClientException e) {
            refused(out, e);
        } catch (MQBrokerException e) {
            refused(out, e);
        } finally {
            out.put("received", received);
            pc.shutdown();
        }
    }
}
