/** An application module that uses panama-verbs. */
module com.example.consumer {
    requires io.github.panamaverbs;
}
