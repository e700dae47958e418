package io.github.panamaverbs.verbs;


import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import jdk.jfr.Recording;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordingFile;
import org.junit.jupiter.api.Test;

/** Keeps the Flight Recorder example of docs/jfr.md compiling and verbatim; JfrIT runs it on the device. */
public class JfrExampleTest {
    private static final String BEGIN = "// README-JFR-EXAMPLE-BEGIN";
    private static final String END = "// README-JFR-EXAMPLE-END";

    /** The example: a registration and a failed verb, recorded, then read back from the file. */
    static List<String> example(String deviceName) throws Exception {
        List<String> lines = new ArrayList<>();
        // README-JFR-EXAMPLE-BEGIN
        try (Recording recording = new Recording()) {
            recording.enable("io.github.panamaverbs.MemoryRegistration");
            recording.enable("io.github.panamaverbs.VerbError");
            recording.start();
            try (Context ctx = Device.open(deviceName);
                 ProtectionDomain pd = ctx.allocateProtectionDomain();
                 MemoryRegion mr = pd.allocateAndRegister(1 << 20, AccessFlag.REMOTE_WRITE)) {
                ctx.createCompletionQueue(Integer.MAX_VALUE);           // more than max_cqe: fails
            } catch (VerbsException expected) {
                // the exception, and a VerbError event with the same verb, errno and message
            }
            recording.stop();
            Path file = Files.createTempFile("verbs", ".jfr");
            recording.dump(file);
            for (RecordedEvent e : RecordingFile.readAllEvents(file)) {
                switch (e.getEventType().getName()) {
                    case "io.github.panamaverbs.MemoryRegistration" -> lines.add(e.getString("verb") + " of "
                            + e.getLong("bytes") + " bytes " + e.getString("access") + " in " + e.getDuration());
                    case "io.github.panamaverbs.VerbError" -> lines.add(e.getString("verb") + " failed: "
                            + e.getString("errnoName"));
                    default -> { }                                      // the recording's other events
                }
            }
            Files.delete(file);
        }
        // README-JFR-EXAMPLE-END
        return lines;
    }

    @Test
    void readmeContainsTheExampleVerbatim() throws Exception {
        ReadmeExampleTest.assertInDocument("docs/jfr.md", JfrExampleTest.class, BEGIN, END);
    }
}
