package io.github.panamaverbs.verbs;

import static io.github.panamaverbs.verbs.MisuseGenerator.Kind.CLOSE_ARENA;
import static io.github.panamaverbs.verbs.MisuseGenerator.Kind.EDIT_SEND;
import static io.github.panamaverbs.verbs.MisuseGenerator.Kind.NEW_ARENA;
import static io.github.panamaverbs.verbs.MisuseGenerator.Kind.NEW_SEND;
import static io.github.panamaverbs.verbs.MisuseGenerator.op;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The misuse generator without a device: the ops that need none (requests and their entries,
 * chains, arenas closed under them, completion batches, and the argument checks made before a
 * device is reached) run against the model. {@code ReliabilityIT} runs all of them on a device.
 */
class MisuseGeneratorTest {

    @Test
    void theRequestsArenasAndBatchesBehaveAsTheModelSays() {
        MisuseGenerator generator = new MisuseGenerator(null, 60);
        for (long seed = 1; seed <= 3; seed++) {
            MisuseGenerator.Result result = generator.run(MisuseGenerator.plan(seed, 3000), false);
            assertNull(result.failure(), () -> "seed " + result.failure());
            MisuseGenerator.Stats s = result.stats();
            assertTrue(s.ok > 100 && s.thrown() > 100, s::toString);
        }
    }

    /**
     * Found by the generator (seed 4 of 5,000 ops, shrunk): clearSges() on a request whose arena was
     * closed threw, but had set the entry count to 0 first.
     */
    @Test
    void regressionClearSgesOnAFreedRequest() {
        List<MisuseGenerator.Op> ops = List.of(op(NEW_SEND, 0xe6f5b0916ed4ecefL), op(NEW_ARENA, 0x44e68626e5fa0351L),
                op(NEW_SEND, 0xd71bd277380f6ad6L), op(NEW_ARENA, 0xfb6e06dbbbfe000fL), op(NEW_SEND, 0xfc82201227adcfffL),
                op(NEW_SEND, 0x70ae0f25f712171dL), op(NEW_SEND, 0x52d06aa6184209efL), op(EDIT_SEND, 0x63df698e59dbe75fL),
                op(NEW_SEND, 0x2993d62418157669L), op(CLOSE_ARENA, 0x2775f1c3af1bd239L), op(NEW_SEND, 0x7b571e5d31cd97c1L),
                op(NEW_SEND, 0x6f47e88c1d8b235bL), op(NEW_SEND, 0xabafac3a2df71bf4L), op(NEW_SEND, 0xe2d8a2a89e9f0a7L),
                op(NEW_SEND, 0xcb6a8c4e0a68c606L), op(NEW_SEND, 0x8a5ffdab7746bbb9L), op(NEW_SEND, 0xbdcf63f5857fb7cbL),
                op(EDIT_SEND, 0x36d50261618838faL));
        MisuseGenerator.Result result = new MisuseGenerator(null, 60).run(ops, false);
        assertNull(result.failure(), () -> String.valueOf(result.failure()));

        // The same, written out.
        Arena arena = Arena.ofShared();
        SendRequest request = new SendRequest(2, arena).inlineData(Arena.ofAuto().allocate(16));
        arena.close();
        assertThrows(IllegalStateException.class, request::clearSges);
        assertEquals(1, request.sgeCount(), "a call that throws changes nothing");
    }

    /**
     * Found by the generator (a random seed of 5,000 ops on rxe, then seed 1 here, shrunk): next() on a
     * request whose arena was closed threw, but had linked the request first, so that a later next()
     * saw a cycle that was not there.
     */
    @Test
    void regressionNextOnAFreedRequest() {
        List<MisuseGenerator.Op> ops = List.of(op(NEW_SEND, 0x9d61a03a3cfc0647L), op(NEW_ARENA, 0x531189a36e5120d3L),
                op(NEW_SEND, 0x44542f6e047c68bfL), op(CLOSE_ARENA, 0x754c6605b54a3551L), op(EDIT_SEND, 0x8ca77e15443a5d06L));
        MisuseGenerator.Result result = new MisuseGenerator(null, 60).run(ops, false);
        assertNull(result.failure(), () -> String.valueOf(result.failure()));

        // The same, written out.
        SendRequest other = new SendRequest(1);
        Arena arena = Arena.ofShared();
        SendRequest request = new SendRequest(1, arena);
        arena.close();
        assertThrows(IllegalStateException.class, () -> request.next(other));
        assertNull(request.next(), "a call that throws changes nothing");
        other.next(request); // no cycle: request links to nothing
    }
}
