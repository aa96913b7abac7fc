import com.alibaba.fastjson.JSONObject;
import com.alibaba.fastjson.serializer.SerializerFeature;

import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageClientExt;
import org.apache.rocketmq.common.message.MessageClientIDSetter;
import org.apache.rocketmq.common.message.MessageExt;

import java.nio.charset.StandardCharsets;
import java.util.HashSet;
import java.util.Set;
import java.util.TreeMap;

/** The driver's stdout: one JSON object per line, written whole under one lock. */
final class Out {
    private Out() {
    }

    static synchronized void emit(JSONObject o) {
        System.out.println(JSONObject.toJSONString(o, SerializerFeature.SortField, SerializerFeature.MapSortField));
        System.out.flush();
    }

    static JSONObject event(String name) {
        JSONObject o = new JSONObject();
        o.put("event", name);
        return o;
    }

    static void log(String text) {
        System.err.println("driver: " + text);
    }

    static String body(Message m) {
        return m.getBody() == null ? null : new String(m.getBody(), StandardCharsets.UTF_8);
    }

    /** A message as sent: its unique id (set by the client before the request leaves), keys, tags, body. */
    static JSONObject sent(String mode, Message m, SendResult r) {
        JSONObject o = event("sent");
        o.put("mode", mode);
        o.put("topic", m.getTopic());
        o.put("msgId", MessageClientIDSetter.getUniqID(m));
        o.put("keys", m.getKeys());
        o.put("tags", m.getTags());
        o.put("body", body(m));
        o.put("props", new TreeMap<String, String>(m.getProperties()));
        if (r != null) {
            o.put("status", r.getSendStatus().name());
            o.put("resultMsgId", r.getMsgId());
            o.put("offsetMsgId", r.getOffsetMsgId());
            o.put("queueId", r.getMessageQueue().getQueueId());
            o.put("queueOffset", r.getQueueOffset());
            o.put("brokerName", r.getMessageQueue().getBrokerName());
        }
        return o;
    }

    /** A message as a consumer saw it. */
    static JSONObject received(String event, String consumer, MessageExt m) {
        JSONObject o = event(event);
        o.put("consumer", consumer);
        o.put("receivedAt", System.currentTimeMillis());
        o.put("topic", m.getTopic());
        o.put("msgId", m.getMsgId());
        o.put("offsetMsgId", m instanceof MessageClientExt ? ((MessageClientExt) m).getOffsetMsgId() : m.getMsgId());
        o.put("keys", m.getKeys());
        o.put("tags", m.getTags());
        o.put("body", body(m));
        o.put("props", new TreeMap<String, String>(m.getProperties()));
        o.put("queueId", m.getQueueId());
        o.put("queueOffset", m.getQueueOffset());
        o.put("reconsumeTimes", m.getReconsumeTimes());
        o.put("bornTimestamp", m.getBornTimestamp());
        o.put("storeTimestamp", m.getStoreTimestamp());
        return o;
    }

    static JSONObject done(String scenario, boolean complete) {
        JSONObject o = new JSONObject();
        o.put("done", true);
        o.put("scenario", scenario);
        o.put("complete", complete);
        return o;
    }

    /** Collects received messages by key (consumer threads add, the scenario waits). */
    static final class Collector {
        private final Set<String> seen = new HashSet<String>();

        synchronized void add(String key) {
            seen.add(key);
            notifyAll();
        }

        synchronized int unique() {
            return seen.size();
        }

        /** Waits until ``n`` distinct keys arrived; false when --timeout ran out first. */
        synchronized boolean await(int n, RocketqDriver.Opts opts) throws InterruptedException {
            while (seen.size() < n) {
                long left = opts.remainingMs();
                if (left <= 0) {
                    return false;
                }
                wait(Math.min(left, 200));
            }
            return true;
        }
    }
}
