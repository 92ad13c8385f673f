// SPDX-License-Identifier: UNLICENSED
pragma solidity ^0.8.24;

/// @title WalletLedger: the e-money ledger that wallet-ops settles on.
/// @notice Balances per wallet in the asset's smallest unit (cents at scale 2). A wallet is named as in
/// wallet-ops (`distributor:<id>`, `merchant:<id>`, `individual:+234…`, `platform:fees`) and keyed by the
/// keccak256 of that name. The issuing account (`platform:issuance`) holds no balance here: issuing mints
/// into `totalSupply`, redeeming burns from it, so the supply is always issued - redeemed.
///
/// What it trusts: the operator account alone, the platform's executor, which decides what to move (the
/// approvals, limits and fees are wallet-ops's business, recorded in its event history). What it enforces
/// by itself, whatever the operator sends: one transaction per operation id, no wallet below zero, and a
/// contract-wide sequence number on every movement, so the chain is the independent record auditors
/// reconcile the history with.
///
/// It is also the arbiter of an operation's fate: `void(operationId)` records that the operation will never
/// execute. A movement for a voided id reverts, and a void for an executed id reverts: the chain's own order
/// decides which came first, so a transaction signed by an executor that then paused cannot move money
/// once another executor's void is mined (wallet-ops records a failure only after its void).
contract WalletLedger {
    string public constant ISSUANCE = "platform:issuance";

    address public immutable operator;
    /// The block of the deployment: where a reader of the Movement events starts.
    uint256 public immutable deployedIn;
    uint256 public totalSupply;
    /// The sequence number of the last executed operation; the first is 1.
    uint64 public sequence;

    mapping(bytes32 wallet => uint256) private balances;
    /// The sequence number of each executed operation (0: not executed), by keccak256 of its id.
    mapping(bytes32 operation => uint64) private executedAs;
    /// The block of each executed operation, so its events are found without scanning the chain.
    mapping(bytes32 operation => uint256) private executedIn;
    /// The block in which each voided operation was voided (0: not voided), by keccak256 of its id.
    mapping(bytes32 operation => uint256) private voidedIn;

    /// One per leg: an operation with a fee emits two, with the same sequence number.
    event Movement(
        uint64 indexed sequence,
        bytes32 indexed operationKey,
        string operationId,
        string from,
        string to,
        uint256 amount
    );

    /// An operation voided: it will never execute.
    event Voided(bytes32 indexed operationKey, string operationId);
    /// A balance carried over from the WalletLedger this one replaces.
    event CarriedOver(string wallet, uint256 amount);

    constructor(address operator_) {
        require(operator_ != address(0), "operator required");
        operator = operator_;
        deployedIn = block.number;
    }

    modifier onlyOperator() {
        require(msg.sender == operator, "only the operator");
        _;
    }

    /// Issues e-money to a wallet: the issuing account pays.
    function issue(string calldata operationId, string calldata to, uint256 amount) external onlyOperator {
        uint64 seq = _begin(operationId);
        _credit(to, amount);
        totalSupply += amount;
        emit Movement(seq, keccak256(bytes(operationId)), operationId, ISSUANCE, to, amount);
    }

    /// Redeems e-money from a wallet back to the issuing account.
    function redeem(string calldata operationId, string calldata from, uint256 amount) external onlyOperator {
        uint64 seq = _begin(operationId);
        _debit(from, amount);
        totalSupply -= amount;
        emit Movement(seq, keccak256(bytes(operationId)), operationId, from, ISSUANCE, amount);
    }

    /// Moves `amount` from one wallet to another and `fee` (0: none) from the same payer to `feeTo`, all or none.
    function transfer(
        string calldata operationId,
        string calldata from,
        string calldata to,
        uint256 amount,
        string calldata feeTo,
        uint256 fee
    ) external onlyOperator {
        uint64 seq = _begin(operationId);
        bytes32 key = keccak256(bytes(operationId));
        require(keccak256(bytes(from)) != keccak256(bytes(to)), "payer is payee");
        _debit(from, amount + fee);
        _credit(to, amount);
        emit Movement(seq, key, operationId, from, to, amount);
        if (fee > 0) {
            _credit(feeTo, fee);
            emit Movement(seq, key, operationId, from, feeTo, fee);
        }
    }

    /// Credits a balance carried over from the WalletLedger this one replaces (a deployment moving to a new
    /// contract, docs/operations.md): only before the first operation executes here, so every movement of
    /// this contract's own comes after what it was given, and the supply grows by what is carried.
    function carryOver(string calldata wallet, uint256 amount) external onlyOperator {
        require(sequence == 0, "operations executed already");
        _credit(wallet, amount);
        totalSupply += amount;
        emit CarriedOver(wallet, amount);
    }

    /// Voids an operation id: no movement for it can execute afterwards. Reverts if it executed already;
    /// voiding a voided id changes nothing (the first void's block stays).
    function void(string calldata operationId) external onlyOperator {
        bytes32 key = keccak256(bytes(operationId));
        require(bytes(operationId).length > 0, "operation id required");
        require(executedAs[key] == 0, "operation already executed");
        if (voidedIn[key] != 0) return;
        voidedIn[key] = block.number;
        emit Voided(key, operationId);
    }

    /// The block in which the operation was voided (0: not voided).
    function voided(string calldata operationId) external view returns (uint256 blockNumber) {
        return voidedIn[keccak256(bytes(operationId))];
    }

    function balanceOf(string calldata wallet) external view returns (uint256) {
        return balances[keccak256(bytes(wallet))];
    }

    /// Where an operation was executed: its sequence number and block (0, 0: not executed).
    function executed(string calldata operationId) external view returns (uint64 seq, uint256 blockNumber) {
        bytes32 key = keccak256(bytes(operationId));
        return (executedAs[key], executedIn[key]);
    }

    function _begin(string calldata operationId) private returns (uint64 seq) {
        bytes32 key = keccak256(bytes(operationId));
        require(bytes(operationId).length > 0, "operation id required");
        require(executedAs[key] == 0, "operation already executed");
        require(voidedIn[key] == 0, "operation voided");
        seq = ++sequence;
        executedAs[key] = seq;
        executedIn[key] = block.number;
    }

    function _credit(string calldata wallet, uint256 amount) private {
        require(amount > 0, "amount must be positive");
        require(keccak256(bytes(wallet)) != keccak256(bytes(ISSUANCE)), "the issuing account holds no balance");
        balances[keccak256(bytes(wallet))] += amount;
    }

    function _debit(string calldata wallet, uint256 amount) private {
        bytes32 key = keccak256(bytes(wallet));
        require(keccak256(bytes(wallet)) != keccak256(bytes(ISSUANCE)), "the issuing account holds no balance");
        uint256 balance = balances[key];
        require(balance >= amount, string.concat("insufficient funds in ", wallet));
        balances[key] = balance - amount;
    }
}
